//! Whisper's language table, copied verbatim from whisper.cpp's `g_lang` map
//! (`src/whisper.cpp` of the copy bundled by `whisper-rs-sys` 0.15.0, the one we link).
//!
//! The position of an entry is its whisper.cpp language id (`whisper_lang_id()`), so the
//! order matters and must never change. Names are whisper.cpp's lowercase English names
//! (`whisper_lang_str_full()`), spelled as it spells them ("haitian creole", "myanmar").
//!
//! Entries 0..=98 exist in every multilingual model. `yue` (99) exists only in models
//! with 100 language tokens (large-v3 and large-v3-turbo, `n_vocab == 51866`).
//!
//! A unit test checks this table against the linked whisper.cpp, id by id.

/// Number of Whisper languages (whisper.cpp's `g_lang`): 99 in every multilingual model
/// plus `yue`, which only large-v3 and large-v3-turbo have.
pub const LANGUAGE_COUNT: usize = 100;

/// `(code, english name)` in whisper.cpp id order: `TABLE[id]`.
pub(crate) static TABLE: [(&str, &str); LANGUAGE_COUNT] = [
    ("en", "english"),        // 0
    ("zh", "chinese"),        // 1
    ("de", "german"),         // 2
    ("es", "spanish"),        // 3
    ("ru", "russian"),        // 4
    ("ko", "korean"),         // 5
    ("fr", "french"),         // 6
    ("ja", "japanese"),       // 7
    ("pt", "portuguese"),     // 8
    ("tr", "turkish"),        // 9
    ("pl", "polish"),         // 10
    ("ca", "catalan"),        // 11
    ("nl", "dutch"),          // 12
    ("ar", "arabic"),         // 13
    ("sv", "swedish"),        // 14
    ("it", "italian"),        // 15
    ("id", "indonesian"),     // 16
    ("hi", "hindi"),          // 17
    ("fi", "finnish"),        // 18
    ("vi", "vietnamese"),     // 19
    ("he", "hebrew"),         // 20
    ("uk", "ukrainian"),      // 21
    ("el", "greek"),          // 22
    ("ms", "malay"),          // 23
    ("cs", "czech"),          // 24
    ("ro", "romanian"),       // 25
    ("da", "danish"),         // 26
    ("hu", "hungarian"),      // 27
    ("ta", "tamil"),          // 28
    ("no", "norwegian"),      // 29
    ("th", "thai"),           // 30
    ("ur", "urdu"),           // 31
    ("hr", "croatian"),       // 32
    ("bg", "bulgarian"),      // 33
    ("lt", "lithuanian"),     // 34
    ("la", "latin"),          // 35
    ("mi", "maori"),          // 36
    ("ml", "malayalam"),      // 37
    ("cy", "welsh"),          // 38
    ("sk", "slovak"),         // 39
    ("te", "telugu"),         // 40
    ("fa", "persian"),        // 41
    ("lv", "latvian"),        // 42
    ("bn", "bengali"),        // 43
    ("sr", "serbian"),        // 44
    ("az", "azerbaijani"),    // 45
    ("sl", "slovenian"),      // 46
    ("kn", "kannada"),        // 47
    ("et", "estonian"),       // 48
    ("mk", "macedonian"),     // 49
    ("br", "breton"),         // 50
    ("eu", "basque"),         // 51
    ("is", "icelandic"),      // 52
    ("hy", "armenian"),       // 53
    ("ne", "nepali"),         // 54
    ("mn", "mongolian"),      // 55
    ("bs", "bosnian"),        // 56
    ("kk", "kazakh"),         // 57
    ("sq", "albanian"),       // 58
    ("sw", "swahili"),        // 59
    ("gl", "galician"),       // 60
    ("mr", "marathi"),        // 61
    ("pa", "punjabi"),        // 62
    ("si", "sinhala"),        // 63
    ("km", "khmer"),          // 64
    ("sn", "shona"),          // 65
    ("yo", "yoruba"),         // 66
    ("so", "somali"),         // 67
    ("af", "afrikaans"),      // 68
    ("oc", "occitan"),        // 69
    ("ka", "georgian"),       // 70
    ("be", "belarusian"),     // 71
    ("tg", "tajik"),          // 72
    ("sd", "sindhi"),         // 73
    ("gu", "gujarati"),       // 74
    ("am", "amharic"),        // 75
    ("yi", "yiddish"),        // 76
    ("lo", "lao"),            // 77
    ("uz", "uzbek"),          // 78
    ("fo", "faroese"),        // 79
    ("ht", "haitian creole"), // 80
    ("ps", "pashto"),         // 81
    ("tk", "turkmen"),        // 82
    ("nn", "nynorsk"),        // 83
    ("mt", "maltese"),        // 84
    ("sa", "sanskrit"),       // 85
    ("lb", "luxembourgish"),  // 86
    ("my", "myanmar"),        // 87
    ("bo", "tibetan"),        // 88
    ("tl", "tagalog"),        // 89
    ("mg", "malagasy"),       // 90
    ("as", "assamese"),       // 91
    ("tt", "tatar"),          // 92
    ("haw", "hawaiian"),      // 93
    ("ln", "lingala"),        // 94
    ("ha", "hausa"),          // 95
    ("ba", "bashkir"),        // 96
    ("jw", "javanese"),       // 97
    ("su", "sundanese"),      // 98
    ("yue", "cantonese"),     // 99
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The table must match the whisper.cpp we link, id by id, code and name.
    #[test]
    fn matches_linked_whisper_cpp() {
        assert_eq!(
            whisper_rs::get_lang_max_id(),
            i32::try_from(LANGUAGE_COUNT - 1).unwrap_or(-1)
        );
        for (index, (code, name)) in TABLE.iter().enumerate() {
            let id = i32::try_from(index).unwrap_or(-1);
            assert_eq!(whisper_rs::get_lang_id(code), Some(id), "{code}");
            assert_eq!(whisper_rs::get_lang_id(name), Some(id), "{name}");
            assert_eq!(whisper_rs::get_lang_str(id), Some(*code), "{id}");
            assert_eq!(whisper_rs::get_lang_str_full(id), Some(*name), "{id}");
        }
    }

    #[test]
    fn codes_and_names_are_unique_lowercase_ascii() {
        let mut all: Vec<&str> = TABLE.iter().flat_map(|(c, n)| [*c, *n]).collect();
        for text in &all {
            assert!(
                text.bytes().all(|b| b.is_ascii_lowercase() || b == b' '),
                "{text}"
            );
        }
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 2 * LANGUAGE_COUNT);
    }
}
