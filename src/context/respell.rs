//! Names read by their own spelling: a spoken form in English letters for a name whose
//! letters follow Polish spelling, Hanyu Pinyin or Irish spelling.
//!
//! A speaker says `Wojciech` "voy-chekh", `Zhiwei` "jir-way" and `Caoimhín` "kwee-veen";
//! Whisper writes what it hears in English spelling ("Void check", "Jure Wei",
//! "Quaving"). Read by English rules the name's letters are far from those words (`w` is
//! not "v", `x` not "sh", `zh` not "j", `mh` not "v"); read by the rules of the spelling
//! they follow, they are close. These spellings have letters that give them away, so a
//! name is respelled only when it has them: Polish letters (`ł`, `ś`, `ż`, ...) or
//! digraphs (`cz`, `sz`, `rz`, `jc`); a word that splits whole into Pinyin syllables,
//! one of them with `x`, `q` or `zh`; Irish lenited consonants (`bh`, `mh`, `dh`), `ao`,
//! a final `agh` or a long vowel beside another (`ái`, `ío`). The respelling is one more
//! spoken form of the term, matched like the others and by the same guards.

use super::mining::is_ordinary_word;

/// The words of `term` read by the spelling its letters follow, in English letters
/// (`Zhiwei` -> "jir way", a word a syllable; `Wojciech` -> "voychehh"); `None` for a
/// term that is not one capitalised word or whose letters follow neither spelling.
#[must_use]
pub fn respelling(term: &str) -> Option<Vec<String>> {
    let capitalised = term.chars().next().is_some_and(char::is_uppercase);
    let letters = term.chars().count();
    if !capitalised || letters > MAX_NAME_LETTERS || !term.chars().all(char::is_alphabetic) {
        return None;
    }
    let lower = term.to_lowercase();
    // A name follows one spelling: the first whose letters it has (Pinyin's "ao" is
    // not Irish).
    pinyin(&lower)
        .or_else(|| polish(&lower))
        .or_else(|| irish(&lower))
        // A reading that is one ordinary word (`Tadhg` "tag") would make the name a
        // homophone of that word, weighed as one; its sound is matched anyway.
        .filter(|words| !(words.is_empty() || words.len() == 1 && is_ordinary_word(&words[0])))
}

/// Longest name read (letters): names are short, and the Pinyin reading's search grows
/// with the word's length, so a request's thousand long terms cost little.
const MAX_NAME_LETTERS: usize = 24;

/// Pinyin initials, longest first.
const INITIALS: &[&str] = &[
    "zh", "ch", "sh", "b", "p", "m", "f", "d", "t", "n", "l", "g", "k", "h", "j", "q", "x", "r",
    "z", "c", "s", "y", "w",
];

/// Pinyin finals (`v` is `ü`) and how an English reader writes them.
const FINALS: &[(&str, &str)] = &[
    ("iang", "yahng"),
    ("iong", "yong"),
    ("uang", "wahng"),
    ("ueng", "wung"),
    ("ang", "ahng"),
    ("eng", "ung"),
    ("ing", "ing"),
    ("ong", "ong"),
    ("ian", "yen"),
    ("iao", "yow"),
    ("uai", "wye"),
    ("uan", "wahn"),
    ("van", "ywen"),
    ("ai", "eye"),
    ("ei", "ay"),
    ("ao", "ow"),
    ("ou", "oh"),
    ("an", "ahn"),
    ("en", "un"),
    ("in", "in"),
    ("un", "wun"),
    ("vn", "yoon"),
    ("er", "er"),
    ("ia", "yah"),
    ("ie", "yeh"),
    ("iu", "yoh"),
    ("ua", "wah"),
    ("uo", "waw"),
    ("ui", "way"),
    ("ue", "yweh"),
    ("ve", "yweh"),
    ("a", "ah"),
    ("o", "aw"),
    ("e", "uh"),
    ("i", "ee"),
    ("u", "oo"),
    ("v", "yoo"),
];

/// A Pinyin syllable's initial in English letters.
fn initial_sound(initial: &str) -> &str {
    match initial {
        "q" => "ch",
        "x" => "sh",
        "zh" | "j" => "j",
        "z" => "dz",
        "c" => "ts",
        other => other,
    }
}

/// A syllable (initial and final) in English letters.
fn syllable_sound(initial: &str, final_: &str, english: &str) -> String {
    let vowel = match (initial, final_) {
        ("zh" | "ch" | "sh" | "r", "i") => "ir",
        ("z" | "c" | "s", "i") => "uh",
        ("j" | "q" | "x" | "y", "u") => "yoo",
        ("j" | "q" | "x" | "y", "un") => "yoon",
        ("j" | "q" | "x" | "y", "uan") => "ywen",
        ("y", "i") => "ee",
        ("y", "an") => "en",
        _ => english,
    };
    let vowel = if initial == "y" || initial == "w" {
        vowel.trim_start_matches(initial)
    } else {
        vowel
    };
    format!("{}{vowel}", initial_sound(initial))
}

/// The word read as Pinyin syllables, in English letters, when it splits whole into
/// syllables and has `x`, `q` or `zh` (letters English names seldom use that way).
fn pinyin(word: &str) -> Option<Vec<String>> {
    let letters: String = word
        .chars()
        .map(|c| if c == 'ü' { 'v' } else { c })
        .collect();
    if !letters.is_ascii() || !(letters.contains(['x', 'q']) || letters.contains("zh")) {
        return None;
    }
    // Fewest syllables covering the word: best[i] = syllables of letters[..i].
    let n = letters.len();
    let mut best: Vec<Option<Vec<String>>> = vec![None; n + 1];
    best[0] = Some(Vec::new());
    for start in 0..n {
        let Some(before) = best[start].clone() else {
            continue;
        };
        let rest = &letters[start..];
        // A syllable without an initial starts the word (Pinyin writes one inside a word
        // after an apostrophe, and writes "i", "u" and "ü" there as "y" and "w").
        let initials = INITIALS
            .iter()
            .copied()
            .filter(|i| rest.starts_with(i))
            .chain((start == 0).then_some(""));
        for initial in initials {
            for &(final_, english) in FINALS {
                let end = start + initial.len() + final_.len();
                let allowed = match initial {
                    "" => final_.starts_with(['a', 'o', 'e']),
                    // "j", "q" and "x" only before "i" and "ü" (written "u").
                    "j" | "q" | "x" => final_.starts_with(['i', 'u', 'v']),
                    _ => true,
                };
                if allowed && end <= n && rest[initial.len()..].starts_with(final_) {
                    let better = best[end]
                        .as_ref()
                        .is_none_or(|b| b.len() > before.len() + 1);
                    if better {
                        let mut path = before.clone();
                        path.push(syllable_sound(initial, final_, english));
                        best[end] = Some(path);
                    }
                }
            }
        }
    }
    best[n].take()
}

/// The word read by Polish spelling, in English letters (one word), when it has a
/// Polish letter or digraph.
fn polish(word: &str) -> Option<Vec<String>> {
    let polish_letter = word.contains(['ą', 'ć', 'ę', 'ł', 'ń', 'ś', 'ź', 'ż']);
    let digraph = ["cz", "sz", "rz", "jc"].iter().any(|d| word.contains(d));
    if !(polish_letter || digraph) {
        return None;
    }
    let chars: Vec<char> = word.chars().collect();
    let vowel = |c: Option<&char>| c.is_some_and(|c| "aeiouyąęó".contains(*c));
    let mut sounds = String::new();
    let mut i = 0;
    while i < chars.len() {
        let at = |k: usize| chars.get(i + k);
        let next_is = |k: usize, c: char| at(k) == Some(&c);
        let last = |len: usize| i + len >= chars.len();
        // A soft consonant written with "i" before a vowel: the "i" is not a vowel.
        let softened = next_is(1, 'i') && vowel(at(2));
        let (sound, len) = match chars[i] {
            's' if next_is(1, 'z') && next_is(2, 'c') && next_is(3, 'z') => ("shch", 4),
            'c' if next_is(1, 'z') => ("ch", 2),
            's' if next_is(1, 'z') => ("sh", 2),
            'c' if next_is(1, 'h') => ("h", 2),
            'r' if next_is(1, 'z') => {
                let voiceless = i > 0 && "ptkfs".contains(chars[i - 1]);
                (if voiceless || last(2) { "sh" } else { "j" }, 2)
            }
            'd' if next_is(1, 'z') || next_is(1, 'ż') || next_is(1, 'ź') => ("j", 2),
            'c' if softened => ("ch", 2),
            's' if softened => ("sh", 2),
            'z' if softened => ("j", 2),
            'n' if softened => ("ny", 2),
            'c' if next_is(1, 'i') => ("chee", 2),
            's' if next_is(1, 'i') => ("shee", 2),
            'z' if next_is(1, 'i') => ("jee", 2),
            'i' if next_is(1, 'e') => ("yeh", 2),
            'ć' => ("ch", 1),
            'ś' => ("sh", 1),
            'ź' | 'ż' => (if last(1) { "sh" } else { "j" }, 1),
            'ń' => ("n", 1),
            'ł' => ("w", 1),
            'ą' => ("on", 1),
            'ę' => (if last(1) { "eh" } else { "en" }, 1),
            'ó' | 'u' => ("oo", 1),
            'w' => (if last(1) { "f" } else { "v" }, 1),
            'j' => ("y", 1),
            'y' => ("i", 1),
            'c' => ("ts", 1),
            'e' => ("eh", 1),
            'a' => ("ah", 1),
            'i' => ("ee", 1),
            'g' if last(1) => ("k", 1),
            'd' if last(1) => ("t", 1),
            _ => ("", 1),
        };
        if sound.is_empty() {
            sounds.push(chars[i]);
        } else {
            sounds.push_str(sound);
        }
        i += len;
    }
    Some(vec![sounds])
}

/// Irish letter groups, longest first, and how an English reader writes them: a
/// lenited consonant (`bh`, `mh` "v"; `dh`, `gh` silent; `th` "h"), the vowel groups
/// (`aoi`, `ao` "ee"), a long vowel (`á` "aw", `í` "ee", `ó` "oh", `ú` "oo", `é` "ay").
const IRISH: &[(&str, &str)] = &[
    ("aoi", "ee"),
    ("uai", "oo"),
    ("ao", "ee"),
    ("bh", "v"),
    ("mh", "v"),
    ("dh", ""),
    ("gh", ""),
    ("th", "h"),
    ("ch", "k"),
    ("nn", "n"),
    ("ái", "aw"),
    ("ói", "oh"),
    ("úi", "oo"),
    ("ío", "ee"),
    ("ea", "a"),
    ("eo", "oh"),
    ("io", "i"),
    ("ua", "oo"),
    ("ia", "ee"),
    ("oi", "u"),
    ("ai", "a"),
    ("ui", "i"),
    ("á", "aw"),
    ("é", "ay"),
    ("í", "ee"),
    ("ó", "oh"),
    ("ú", "oo"),
    ("c", "k"),
];

/// The word read by Irish spelling, in English letters (one word), when it has Irish
/// letter groups: a lenited `bh`, `mh` or `dh`, `ao`, a final `agh`, or a long vowel
/// beside another vowel (`ái`, `ío`, `ói`). An `s` before `e` or `i` is "sh", a final
/// `e` is "a" (`Saoirse` "seersha", `Gráinne` "grawna").
fn irish(word: &str) -> Option<Vec<String>> {
    let lenited = ["bh", "mh", "dh", "ao"].iter().any(|g| word.contains(g));
    let long_vowel = ["ái", "ói", "úi", "ío", "uí", "eá", "ía"]
        .iter()
        .any(|g| word.contains(g));
    if !(lenited || long_vowel || word.ends_with("agh")) {
        return None;
    }
    let mut sounds = String::new();
    let mut rest = word;
    while let Some(c) = rest.chars().next() {
        let slender_next = rest[c.len_utf8()..].starts_with(['e', 'i', 'é', 'í']);
        if c == 's' && slender_next {
            sounds.push_str("sh");
            rest = &rest[1..];
            continue;
        }
        if rest == "e" {
            sounds.push('a');
            break;
        }
        if let Some((letters, sound)) = IRISH.iter().find(|(letters, _)| rest.starts_with(letters))
        {
            sounds.push_str(sound);
            rest = &rest[letters.len()..];
        } else {
            sounds.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    Some(vec![sounds])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(term: &str) -> Vec<String> {
        respelling(term)
            .iter()
            .map(|words| words.join(" "))
            .collect()
    }

    #[test]
    fn pinyin_names_are_read_by_pinyin() {
        assert_eq!(texts("Zhiwei"), ["jir way"]);
        assert_eq!(texts("Xiaoqing"), ["shyow ching"]);
        assert_eq!(texts("Qian"), ["chyen"]);
        assert_eq!(texts("Xinyi"), ["shin yee"]);
    }

    #[test]
    fn polish_names_are_read_by_polish_spelling() {
        assert_eq!(texts("Wojciech"), ["voychehh"]);
        assert_eq!(texts("Przemysław"), ["pshehmiswahf"]);
    }

    #[test]
    fn irish_names_are_read_by_irish_spelling() {
        assert_eq!(texts("Caoimhín"), ["keeveen"]);
        assert_eq!(texts("Saoirse"), ["seersha"]);
        assert_eq!(texts("Róisín"), ["rohsheen"]);
        assert_eq!(texts("Siobhán"), ["shivawn"]);
        // Not a reading that is an ordinary word: the name would be its homophone.
        assert!(texts("Tadhg").is_empty());
    }

    #[test]
    fn other_words_are_not_respelled() {
        for term in [
            "Qdrant",
            "Kubernetes",
            "Xavier",
            "Max",
            "mazurka",
            "Chen",
            "Hugh",
            "Ramón",
            "Xiaoxiaoxiaoxiaoxiaoxiaoxiao",
        ] {
            assert!(texts(term).is_empty(), "{term}: {:?}", texts(term));
        }
    }
}
