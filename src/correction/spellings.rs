//! Letter-to-sound keys by the conventions of German, Spanish and French spelling, in the
//! phone classes of [`phonetic`](super::phonetic).
//!
//! A name in a German, Spanish or French sentence is said by that language's rules, and
//! Whisper writes what it hears in that language's spelling: "Ciclosporin" said in German
//! comes out "Ziklosporin", "Xóchitl" in Spanish "Sóchitl", "Thibault" in French
//! "Tibo". English rules put those pairs far apart; read both by the sentence's language,
//! each pair has one key. The strict matcher ([`Corrector::correct`](super::Corrector::correct))
//! compares the spans of a German, Spanish or French transcript with the terms by the
//! language's keys, with the closeness it asks of common words.
//!
//! The rules are ordered letter patterns, the first that applies at a position wins
//! (digraphs before their letters, a pattern at the end of a word before the same
//! pattern anywhere). Letters no rule names stand for themselves. Like the English rules
//! they are wrong for many words; both sides of a comparison go through the same ones.

use crate::context::Language;

use super::phonetic::{folded_letters, word_phones};

/// Whose spelling conventions turn letters into phones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// [`phonetic`](super::phonetic)'s English rules, for every other language too.
    English,
    /// German.
    German,
    /// Spanish.
    Spanish,
    /// French.
    French,
}

impl Spelling {
    /// The conventions of a transcript in `language` (`None`: unknown, English).
    #[must_use]
    pub fn of(language: Option<Language>) -> Self {
        match language.map(Language::code) {
            Some("de") => Spelling::German,
            Some("es") => Spelling::Spanish,
            Some("fr") => Spelling::French,
            _ => Spelling::English,
        }
    }

    fn rules(self) -> &'static [Rule] {
        match self {
            Spelling::English => &[],
            Spelling::German => GERMAN,
            Spelling::Spanish => SPANISH,
            Spelling::French => FRENCH,
        }
    }
}

/// Where a pattern applies, by the letters around it.
#[derive(Debug, Clone, Copy)]
enum When {
    Anywhere,
    /// At the start of the word.
    Start,
    /// At the start of the word, before a vowel.
    StartBeforeVowel,
    /// At the end of the word.
    End,
    /// Before e, i or y.
    BeforeFront,
    /// Before a vowel.
    BeforeVowel,
    /// Not before a vowel (before a consonant or at the end).
    BeforeNoVowel,
    /// Between two vowels.
    BetweenVowels,
    /// After a vowel, not before one.
    AfterVowelBeforeNoVowel,
    /// After a vowel.
    AfterVowel,
}

/// Letters (lowercase; `E` is an accented e, `N` is ñ) and the phones they make.
#[derive(Debug)]
struct Rule {
    letters: &'static [u8],
    when: When,
    phones: &'static [u8],
}

const fn rule(letters: &'static [u8], when: When, phones: &'static [u8]) -> Rule {
    Rule {
        letters,
        when,
        phones,
    }
}

use When::{
    AfterVowel, AfterVowelBeforeNoVowel, Anywhere, BeforeFront, BeforeNoVowel, BeforeVowel,
    BetweenVowels, End, Start, StartBeforeVowel,
};

/// German: "sch", "tsch", "ch" (as in "Bach": `h`), Polish "cz" and "sz", "z" and soft
/// "c" said "ts", "w" said "v", "v" said "f", "j" said "y", "ei" said "eye", "ie" a long
/// i, "eu" "oy", a lengthening h, final devoicing.
const GERMAN: &[Rule] = &[
    rule(b"tsch", Anywhere, b"C"),
    rule(b"sch", Anywhere, b"S"),
    // Polish names, common in German: "cz" said "tsch", "sz" said "sch".
    rule(b"cz", Anywhere, b"C"),
    rule(b"sz", Anywhere, b"S"),
    rule(b"chs", Anywhere, b"ks"),
    rule(b"ch", Anywhere, b"h"),
    rule(b"ck", Anywhere, b"k"),
    rule(b"ph", Anywhere, b"f"),
    rule(b"th", Anywhere, b"t"),
    rule(b"qu", Anywhere, b"kv"),
    rule(b"dt", Anywhere, b"t"),
    rule(b"tz", Anywhere, b"ts"),
    rule(b"z", Anywhere, b"ts"),
    rule(b"ng", Anywhere, b"N"),
    rule(b"sp", Start, b"Sp"),
    rule(b"st", Start, b"St"),
    rule(b"s", StartBeforeVowel, b"z"),
    rule(b"s", BetweenVowels, b"z"),
    rule(b"w", Anywhere, b"v"),
    rule(b"v", Anywhere, b"f"),
    rule(b"j", Anywhere, b"y"),
    rule(b"y", StartBeforeVowel, b"y"),
    rule(b"x", Anywhere, b"ks"),
    rule(b"c", BeforeFront, b"ts"),
    rule(b"c", Anywhere, b"k"),
    rule(b"ei", Anywhere, b"1"),
    rule(b"ai", Anywhere, b"1"),
    rule(b"ey", Anywhere, b"1"),
    rule(b"ay", Anywhere, b"1"),
    rule(b"ie", Anywhere, b"i"),
    rule(b"eu", Anywhere, b"3"),
    rule(b"Eu", Anywhere, b"3"),
    rule(b"au", Anywhere, b"4"),
    rule(b"h", AfterVowelBeforeNoVowel, b""),
    rule(b"y", Anywhere, b"i"),
    rule(b"d", End, b"t"),
    rule(b"b", End, b"p"),
    rule(b"g", End, b"k"),
];

/// Spanish: "j" and soft "g" said like the h of "Bach" (`h`), soft "c" and "z" said "s",
/// "ll" said "y", "ñ" "ny", "qu" and "gu" before e/i with a silent u, a silent h, "v"
/// said "b", an initial x said "s".
const SPANISH: &[Rule] = &[
    rule(b"ch", Anywhere, b"C"),
    rule(b"ll", Anywhere, b"y"),
    rule(b"N", Anywhere, b"ny"),
    rule(b"qu", Anywhere, b"k"),
    rule(b"gu", BeforeFront, b"g"),
    rule(b"g", BeforeFront, b"h"),
    rule(b"j", Anywhere, b"h"),
    rule(b"c", BeforeFront, b"s"),
    rule(b"c", Anywhere, b"k"),
    rule(b"z", Anywhere, b"s"),
    rule(b"hu", BeforeVowel, b"w"),
    rule(b"h", Anywhere, b""),
    rule(b"v", Anywhere, b"b"),
    rule(b"x", Start, b"s"),
    rule(b"x", Anywhere, b"ks"),
    rule(b"y", BeforeNoVowel, b"i"),
];

/// French: silent final letters (e, s, x, t, d, z, p; "-er" said "e"), "eau", "au" and
/// "-aux" said "o", "ou" said "u", "oi" "wa", "ai" and "ei" an e, "ch" said "sh", "j" and
/// soft "g" said "zh", "gn" "ny", a silent h, "qu" and "gu" before e/i with a silent u,
/// "w" said "v", an s between vowels said "z", nasal "en" said "an", "in"/"ain"/"un" said
/// "en".
const FRENCH: &[Rule] = &[
    rule(b"eaux", End, b"o"),
    rule(b"aux", End, b"o"),
    rule(b"ault", End, b"o"),
    rule(b"eau", Anywhere, b"o"),
    rule(b"er", End, b"e"),
    rule(b"es", End, b""),
    rule(b"e", End, b""),
    rule(b"s", End, b""),
    rule(b"x", End, b""),
    rule(b"t", End, b""),
    rule(b"d", End, b""),
    rule(b"z", End, b""),
    rule(b"p", End, b""),
    rule(b"tion", Anywhere, b"syon"),
    rule(b"ch", Anywhere, b"S"),
    rule(b"ph", Anywhere, b"f"),
    rule(b"th", Anywhere, b"t"),
    rule(b"qu", Anywhere, b"k"),
    rule(b"gu", BeforeFront, b"g"),
    rule(b"gn", Anywhere, b"ny"),
    rule(b"ge", BeforeVowel, b"Z"),
    rule(b"g", BeforeFront, b"Z"),
    rule(b"j", Anywhere, b"Z"),
    rule(b"c", BeforeFront, b"s"),
    rule(b"c", Anywhere, b"k"),
    rule(b"ill", AfterVowel, b"y"),
    rule(b"h", Anywhere, b""),
    rule(b"w", Anywhere, b"v"),
    rule(b"x", Anywhere, b"ks"),
    rule(b"s", BetweenVowels, b"z"),
    rule(b"oi", Anywhere, b"wa"),
    rule(b"ou", Anywhere, b"u"),
    rule(b"au", Anywhere, b"o"),
    rule(b"ai", Anywhere, b"e"),
    rule(b"ei", Anywhere, b"e"),
    rule(b"oeu", Anywhere, b"e"),
    rule(b"eu", Anywhere, b"e"),
    rule(b"ui", Anywhere, b"wi"),
    rule(b"en", BeforeNoVowel, b"an"),
    rule(b"em", BeforeNoVowel, b"an"),
    // "ain" and "ein" are "en" already: "ai" and "ei" above, then the n.
    rule(b"in", BeforeNoVowel, b"en"),
    rule(b"un", BeforeNoVowel, b"en"),
    rule(b"y", Anywhere, b"i"),
];

/// The key of spoken `words` by `spelling`'s conventions (English: [`phonetic_key`]).
///
/// [`phonetic_key`]: super::phonetic::phonetic_key
#[must_use]
pub fn key_by<S: AsRef<str>>(words: &[S], spelling: Spelling) -> Vec<u8> {
    let mut key = Vec::new();
    for word in words {
        let word = word.as_ref();
        let letters = local_letters(word);
        if spelling == Spelling::English || letters.len() < 2 {
            // A letter said alone is its (English) name: Whisper writes spelled-out
            // letters as capitals whatever the language.
            word_phones(word, &mut key);
        } else {
            apply_rules(&letters, spelling.rules(), &mut key);
        }
    }
    key.dedup();
    key
}

/// The letters of `word`, lowercase, with what the rules read kept: accented e as `E`
/// (never silent), ñ as `N`, ç as s, ä as `E`; other accents folded.
fn local_letters(word: &str) -> Vec<u8> {
    let mut letters = Vec::with_capacity(word.len());
    for c in word.chars().flat_map(char::to_lowercase) {
        match c {
            'é' | 'è' | 'ê' | 'ë' | 'ä' => letters.push(b'E'),
            'ñ' => letters.push(b'N'),
            'ç' => letters.push(b's'),
            other => letters.extend(folded_letters(other.encode_utf8(&mut [0; 4]))),
        }
    }
    letters
}

fn is_vowel_letter(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u' | b'E')
}

/// Appends the phones of `letters` by `rules`.
fn apply_rules(letters: &[u8], rules: &[Rule], out: &mut Vec<u8>) {
    let n = letters.len();
    let mut i = 0;
    while i < n {
        let found = rules
            .iter()
            .find(|rule| letters[i..].starts_with(rule.letters) && applies(rule, letters, i));
        if let Some(rule) = found {
            out.extend_from_slice(rule.phones);
            i += rule.letters.len();
            continue;
        }
        out.extend_from_slice(match letters[i] {
            b'E' => b"e",
            b'N' => b"ny",
            b'c' | b'q' => b"k",
            b'x' => b"ks",
            b'j' => b"J",
            b'y' => b"i",
            _ => &letters[i..=i],
        });
        i += 1;
    }
}

fn applies(rule: &Rule, letters: &[u8], i: usize) -> bool {
    let after = i + rule.letters.len();
    let next = letters.get(after).copied();
    let previous = i.checked_sub(1).map(|k| letters[k]);
    let vowel_next = next.is_some_and(is_vowel_letter);
    let vowel_before = previous.is_some_and(is_vowel_letter);
    match rule.when {
        Anywhere => true,
        Start => i == 0,
        StartBeforeVowel => i == 0 && vowel_next,
        End => after == letters.len() && letters.len() > rule.letters.len() + 1,
        BeforeFront => matches!(next, Some(b'e' | b'i' | b'y' | b'E')),
        BeforeVowel => vowel_next,
        BeforeNoVowel => !vowel_next,
        BetweenVowels => vowel_before && vowel_next,
        AfterVowelBeforeNoVowel => vowel_before && !vowel_next,
        AfterVowel => vowel_before,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str, spelling: Spelling) -> String {
        let words: Vec<&str> = text.split_whitespace().collect();
        String::from_utf8_lossy(&key_by(&words, spelling)).into_owned()
    }

    #[test]
    fn spellings_of_one_sound_share_a_key_in_their_language() {
        use Spelling::{French, German, Spanish};
        for (a, b, spelling) in [
            ("Ciclosporin", "Ziklosporin", German),
            ("Wojciechowski", "Wojziechowski", German),
            ("Lormetazepam", "Lormetatsepam", German),
            ("Schmidt", "Schmitt", German),
            ("Czerwinski", "Tscherwinski", German),
            ("Jaworska", "Yaworska", German),
            ("Xóchitl", "Sóchitl", Spanish),
            ("quetiapina", "ketiapina", Spanish),
            ("Yllescas", "Illescas", Spanish),
            ("Giménez", "Jiménez", Spanish),
            ("ceftriaxona", "seftriaksona", Spanish),
            ("Thibault", "Tibo", French),
            ("Gauthier", "Gautier", French),
            ("Margaux", "Margot", French),
            ("Rousseau", "Rousso", French),
            ("Ghislaine", "Guislène", French),
        ] {
            assert_eq!(key(a, spelling), key(b, spelling), "{a} / {b}");
        }
    }

    #[test]
    fn english_keys_keep_them_apart_and_the_rules_read_as_the_language_does() {
        assert_ne!(
            key("Thibault", Spelling::English),
            key("Tibo", Spelling::English)
        );
        assert_eq!(key("Ciclosporin", Spelling::German), "tsiklosporin");
        assert_eq!(key("Schweiz", Spelling::German), "Sv1ts");
        assert_eq!(key("Jiménez", Spelling::Spanish), "himenes");
        assert_eq!(key("Peña", Spelling::Spanish), "penya");
        assert_eq!(key("Gauthier", Spelling::French), "gotie");
        assert_eq!(key("champignon", Spelling::French), "Sampinyon");
    }

    #[test]
    fn single_letters_are_their_names_and_english_is_unchanged() {
        assert_eq!(
            key("O V H", Spelling::French),
            key("O V H", Spelling::English)
        );
        assert_eq!(
            key("kube control", Spelling::English),
            String::from_utf8_lossy(&super::super::phonetic::phonetic_key(&["kube", "control"]))
        );
    }
}
