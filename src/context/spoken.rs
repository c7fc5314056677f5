//! Spoken forms: how a written term sounds when dictated, as a sequence of words.
//!
//! A term is split into pieces ([`split_pieces`]): words (camelCase, PascalCase and
//! letter/digit boundaries split too), numbers and symbols. Each piece has spoken
//! alternatives: a symbol is said ("dot", "underscore", "dash", "slash") or left out,
//! a number is said in words ("Q3" -> "q three"), an acronym or an unpronounceable
//! piece is spelled letter by letter ("vLLM" -> "v l l m", "jq" -> "j q"), and a small
//! table knows how common abbreviations are said ("py" -> "pie", "yml" -> "yammel",
//! "ctl" -> "control" / "cuttle" / "c t l"). [`spoken_forms`] combines them into a short
//! list of alternatives, most likely first.
//!
//! Transcript text goes through the same splitting ([`transcript_words`]) so that both
//! sides of a comparison are sequences of spoken words.

/// One piece of a written term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A run of letters (apostrophes included), as written.
    Word(String),
    /// A run of ASCII digits.
    Number(String),
    /// Any other visible character (`.`, `_`, `-`, `/`, `+`, ...).
    Symbol(char),
}

/// The kind of optional symbol the leading dashes of a command-line option are (a
/// character no term contains: only a key for "said or not").
const LEADING_DASHES: char = '\u{0}';

/// At most this many spoken forms per term.
pub const MAX_SPOKEN_FORMS: usize = 12;

/// A spoken form: the words a speaker says for a term, lowercase. A spelled letter is a
/// one-letter word (`"i"`, `"d"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct SpokenForm {
    /// The spoken words, lowercase.
    pub words: Vec<String>,
}

impl SpokenForm {
    /// The words joined by single spaces (`"get user by i d"`).
    #[must_use]
    pub fn text(&self) -> String {
        self.words.join(" ")
    }
}

/// How abbreviations common in file names and identifiers are said, most likely first.
/// Letters spelled out are single-letter words.
const SPOKEN_ABBREVIATIONS: &[(&str, &[&str])] = &[
    ("py", &["pie", "p y", "pi"]),
    ("md", &["m d", "markdown"]),
    ("rs", &["r s"]),
    ("js", &["j s", "javascript"]),
    ("ts", &["t s", "typescript"]),
    ("cs", &["c s"]),
    ("go", &["go"]),
    ("rb", &["r b", "ruby"]),
    ("sh", &["s h", "shell"]),
    ("yml", &["yammel", "y m l", "yaml"]),
    ("yaml", &["yammel", "yaml", "y m l"]),
    ("toml", &["tommel", "toml", "t o m l"]),
    ("json", &["jason", "j s o n"]),
    ("jsonl", &["jason l", "j s o n l"]),
    ("sql", &["sequel", "s q l"]),
    ("ctl", &["control", "cuttle", "c t l"]),
    ("k8s", &["kubernetes", "k eight s", "kates"]),
    ("txt", &["text", "t x t"]),
    ("cfg", &["config", "c f g"]),
    ("conf", &["conf", "config"]),
    ("env", &["env", "e n v", "environment"]),
    ("src", &["source", "s r c"]),
    ("lib", &["lib", "library"]),
    ("pkg", &["package", "p k g"]),
    ("msg", &["message", "m s g"]),
    ("img", &["image", "i m g"]),
    ("tmp", &["temp", "t m p"]),
    ("usr", &["user", "u s r"]),
    ("std", &["standard", "s t d"]),
    ("mgr", &["manager", "m g r"]),
    ("btn", &["button", "b t n"]),
    ("fn", &["function", "f n"]),
    ("regex", &["rejex", "regex"]),
    ("nginx", &["engine x", "n g i n x"]),
    ("vue", &["view", "vue"]),
    ("readme", &["read me"]),
    ("gui", &["gooey", "g u i"]),
    ("url", &["u r l", "earl"]),
    ("async", &["a sync", "async"]),
    ("sqlite", &["sequel lite", "s q lite"]),
    ("postgres", &["postgres", "post gres"]),
    ("pytest", &["pie test", "p y test"]),
    ("numpy", &["num pie", "numb pie"]),
    ("scipy", &["sigh pie", "s c pie"]),
    ("pypi", &["pie p i", "pie pie"]),
    ("cpp", &["c plus plus", "c p p"]),
    ("ci", &["c i"]),
    ("io", &["i o"]),
    ("id", &["i d", "id"]),
    ("ids", &["i ds", "i d s"]),
];

/// Abbreviations that end compound tool names (`kubectl`, `mongodb`, `graphql`,
/// `nodejs`, `numpy`): a rare lowercase word ending in one is said as its stem, then
/// the abbreviation.
const ABBREVIATION_SUFFIXES: &[&str] = &["ctl", "sql", "db", "js", "py", "ql", "fs", "md"];

/// Last pieces after which a dot often goes unsaid (library and product names).
const UNSAID_DOT_SUFFIXES: &[&str] = &["js", "io", "ai"];

/// Symbols whose spoken name a speaker often leaves out (`user_service` is said "user
/// service" as often as "user underscore service").
const OPTIONAL_SYMBOLS: &[char] = &['_', '-', '/', '\''];

/// Splits written text into pieces: words at camelCase, PascalCase, acronym and
/// letter/digit boundaries, numbers, and symbols. Whitespace only separates.
///
/// `"getUserById"` -> get, User, By, Id; `"HTTPServer2"` -> HTTP, Server, 2;
/// `"docker-compose.yml"` -> docker, `-`, compose, `.`, yml.
#[must_use]
pub fn split_pieces(text: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut word: Vec<char> = Vec::new();
    let mut number = String::new();
    let flush_word = |word: &mut Vec<char>, pieces: &mut Vec<Piece>| {
        if !word.is_empty() {
            pieces.push(Piece::Word(word.drain(..).collect()));
        }
    };
    let flush_number = |number: &mut String, pieces: &mut Vec<Piece>| {
        if !number.is_empty() {
            pieces.push(Piece::Number(std::mem::take(number)));
        }
    };
    for c in text.chars() {
        if c.is_alphabetic() || (is_apostrophe(c) && !word.is_empty()) {
            flush_number(&mut number, &mut pieces);
            if c.is_uppercase() {
                // lower -> Upper starts a new word ("getUser").
                if word.last().is_some_and(|p| p.is_lowercase()) {
                    flush_word(&mut word, &mut pieces);
                }
            } else if c.is_lowercase() && word.len() >= 2 {
                // UPPER Upper lower: the last capital starts a new word ("HTTPServer").
                let n = word.len();
                if word[n - 1].is_uppercase() && word[n - 2].is_uppercase() {
                    let last = word.pop();
                    flush_word(&mut word, &mut pieces);
                    word.extend(last);
                }
            }
            word.push(c);
        } else if c.is_ascii_digit() {
            flush_word(&mut word, &mut pieces);
            number.push(c);
        } else {
            flush_word(&mut word, &mut pieces);
            flush_number(&mut number, &mut pieces);
            if !c.is_whitespace() {
                pieces.push(Piece::Symbol(c));
            }
        }
    }
    flush_word(&mut word, &mut pieces);
    flush_number(&mut number, &mut pieces);
    // An apostrophe that ended a word ("users'") is a symbol, not part of the word.
    pieces
        .into_iter()
        .flat_map(|piece| match piece {
            Piece::Word(w) if w.chars().last().is_some_and(is_apostrophe) => {
                let trimmed: String = w.trim_end_matches(is_apostrophe).to_owned();
                let mut out = Vec::new();
                if !trimmed.is_empty() {
                    out.push(Piece::Word(trimmed));
                }
                out.push(Piece::Symbol('\''));
                out
            }
            other => vec![other],
        })
        .collect()
}

/// An apostrophe, straight or curly.
pub(crate) fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '\u{2019}'
}

/// The spoken forms of a written term, most likely first, at most
/// [`MAX_SPOKEN_FORMS`], without duplicates. Empty for a term with nothing to say.
///
/// ```
/// use ctxscribe::context::spoken::spoken_forms;
/// let forms: Vec<String> = spoken_forms("user_service.py").iter().map(|f| f.text()).collect();
/// assert!(forms.contains(&"user underscore service dot pie".to_owned()));
/// assert!(forms.contains(&"user service dot pie".to_owned()));
/// ```
#[must_use]
pub fn spoken_forms(term: &str) -> Vec<SpokenForm> {
    let (spoken, optional) = piece_choices(term);
    let mut forms = combine(&spoken, &optional);
    // A name read by the spelling it follows (Pinyin, Polish, Irish), as one more form.
    if let Some(words) = super::respell::respelling(term) {
        let form = SpokenForm { words };
        if forms.len() < MAX_SPOKEN_FORMS && !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

/// Per piece of `term` that is said, its spoken alternatives, and the symbol it is when
/// it may go unsaid (a whole-term abbreviation is one piece).
type PieceChoices = (Vec<Vec<Vec<String>>>, Vec<Option<char>>);

/// The [`PieceChoices`] of a written term.
fn piece_choices(term: &str) -> PieceChoices {
    let pieces = split_pieces(term);
    // Per piece, its alternatives, and the symbol it is when it may go unsaid.
    let mut spoken: Vec<Vec<Vec<String>>> = Vec::with_capacity(pieces.len());
    let mut optional: Vec<Option<char>> = Vec::with_capacity(pieces.len());
    // A whole-term abbreviation ("NumPy", "k8s") is said as a unit.
    let lowered = term.to_lowercase();
    if let Some(alternatives) = abbreviation(&lowered) {
        spoken.push(alternatives);
        optional.push(None);
    } else {
        for (index, piece) in pieces.iter().enumerate() {
            let (alternatives, mut is_optional) = piece_alternatives(piece);
            // "Next.js", "Socket.IO": the dot before a last, library-style suffix is
            // usually not said ("next JS", "socket I O").
            if *piece == Piece::Symbol('.')
                && index + 2 == pieces.len()
                && matches!(&pieces[index + 1], Piece::Word(w)
                    if UNSAID_DOT_SUFFIXES.contains(&w.to_lowercase().as_str()))
            {
                is_optional = true;
            }
            if !alternatives.is_empty() {
                spoken.push(alternatives);
                optional.push(match piece {
                    // The dashes that open a command-line option ("--schema-only") are
                    // said or left out on their own, apart from the dashes inside it
                    // ("dash dash schema only").
                    Piece::Symbol('-')
                        if is_optional
                            && pieces[..index].iter().all(|p| *p == Piece::Symbol('-')) =>
                    {
                        Some(LEADING_DASHES)
                    }
                    Piece::Symbol(symbol) if is_optional => Some(*symbol),
                    _ => None,
                });
            }
        }
    }
    (spoken, optional)
}

/// The spoken forms of a term's [`PieceChoices`], in [`spoken_forms`]'s order.
fn combine(spoken: &[Vec<Vec<String>>], optional: &[Option<char>]) -> Vec<SpokenForm> {
    let mut forms: Vec<SpokenForm> = Vec::new();
    let push = |words: Vec<String>, forms: &mut Vec<SpokenForm>| {
        if !words.is_empty()
            && forms.len() < MAX_SPOKEN_FORMS
            && !forms.iter().any(|f| f.words == words)
        {
            forms.push(SpokenForm { words });
        }
    };
    // Each kind of optional symbol is said or left out on its own ("source slash utils
    // slash date format": slashes said, the underscore not): first all said, then none,
    // then the mixed choices; within each, every piece's first alternative, then each
    // piece's other alternatives one at a time.
    let mut kinds: Vec<char> = optional.iter().flatten().copied().collect();
    kinds.sort_unstable();
    kinds.dedup();
    let all_said = (1u32 << kinds.len()) - 1;
    let mut choices = vec![all_said];
    if all_said != 0 {
        choices.push(0);
    }
    choices.extend((1..all_said).rev());
    for said in choices {
        let choose = |overrides: Option<(usize, usize)>| -> Vec<String> {
            let mut words = Vec::new();
            for (index, alternatives) in spoken.iter().enumerate() {
                if let Some(symbol) = optional[index] {
                    let kind = kinds.iter().position(|&k| k == symbol).unwrap_or(0);
                    if said & (1 << kind) == 0 {
                        continue;
                    }
                }
                let pick = match overrides {
                    Some((at, alternative)) if at == index => alternative,
                    _ => 0,
                };
                words.extend(alternatives[pick].iter().cloned());
            }
            words
        };
        push(choose(None), &mut forms);
        for (index, alternatives) in spoken.iter().enumerate() {
            for alternative in 1..alternatives.len() {
                push(choose(Some((index, alternative))), &mut forms);
            }
        }
    }
    forms
}

/// The table's spoken alternatives for a lowercase abbreviation.
fn abbreviation(lowercase: &str) -> Option<Vec<Vec<String>>> {
    SPOKEN_ABBREVIATIONS
        .iter()
        .find(|(written, _)| *written == lowercase)
        .map(|(_, said)| said.iter().map(|s| words_of(s)).collect())
}

fn words_of(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// A piece's spoken alternatives (most likely first) and whether it may go unsaid.
fn piece_alternatives(piece: &Piece) -> (Vec<Vec<String>>, bool) {
    match piece {
        Piece::Word(word) => (word_alternatives(word), false),
        Piece::Number(digits) => (vec![number_words(digits)], false),
        Piece::Symbol(symbol) => match symbol_name(*symbol) {
            Some(name) => (
                vec![vec![name.to_owned()]],
                OPTIONAL_SYMBOLS.contains(symbol),
            ),
            None => (Vec::new(), true),
        },
    }
}

fn word_alternatives(word: &str) -> Vec<Vec<String>> {
    let lower: String = word
        .chars()
        .filter(|c| !is_apostrophe(*c))
        .collect::<String>();
    let lower = lower.to_lowercase();
    if let Some(alternatives) = abbreviation(&lower) {
        return alternatives;
    }
    let letters = || lower.chars().map(|c| c.to_string()).collect::<Vec<_>>();
    let char_count = lower.chars().count();
    if char_count <= 1 {
        return vec![vec![lower]];
    }
    let is_acronym = word.chars().all(|c| c.is_uppercase());
    if is_acronym && char_count <= 3 {
        return vec![letters(), vec![lower]];
    }
    if !has_vowel(&lower) {
        return vec![letters()];
    }
    if !is_acronym && let Some(split) = split_abbreviation_suffix(&lower) {
        return split;
    }
    if is_acronym && char_count <= 5 {
        return vec![vec![lower.clone()], letters()];
    }
    vec![vec![lower]]
}

/// `kubectl` -> kube control / kube cuttle / kube c t l / kubectl, for a rare word
/// (not a common word) whose stem has a vowel.
fn split_abbreviation_suffix(lower: &str) -> Option<Vec<Vec<String>>> {
    if super::mining::is_common_word(lower) {
        return None;
    }
    let suffix = ABBREVIATION_SUFFIXES
        .iter()
        .find(|suffix| lower.len() >= suffix.len() + 2 && lower.ends_with(*suffix))?;
    let stem = &lower[..lower.len() - suffix.len()];
    if !has_vowel(stem) {
        return None;
    }
    let mut alternatives: Vec<Vec<String>> = abbreviation(suffix)
        .unwrap_or_else(|| vec![suffix.chars().map(|c| c.to_string()).collect()])
        .into_iter()
        .map(|said| std::iter::once(stem.to_owned()).chain(said).collect())
        .collect();
    alternatives.push(vec![lower.to_owned()]);
    Some(alternatives)
}

fn has_vowel(word: &str) -> bool {
    word.chars().any(|c| {
        matches!(c, 'a' | 'e' | 'i' | 'o' | 'u' | 'y') || (c.is_alphabetic() && !c.is_ascii())
    })
}

/// The spoken name of a symbol inside a term, if it has one.
pub(crate) fn symbol_name(symbol: char) -> Option<&'static str> {
    Some(match symbol {
        '.' => "dot",
        '_' => "underscore",
        '-' => "dash",
        '/' | '\\' => "slash",
        '+' => "plus",
        '#' => "sharp",
        '@' => "at",
        '&' => "and",
        '%' => "percent",
        _ => return None,
    })
}

/// Digits said as English number words: `"3"` -> three, `"42"` -> forty two; longer
/// numbers digit by digit, as version numbers and codes are read.
#[must_use]
pub fn number_words(digits: &str) -> Vec<String> {
    const ONES: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 10] = [
        "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    let digit_by_digit = || {
        digits
            .bytes()
            .map(|b| ONES[usize::from(b - b'0')].to_owned())
            .collect::<Vec<_>>()
    };
    if digits.len() > 3 || (digits.len() > 1 && digits.starts_with('0')) {
        return digit_by_digit();
    }
    let Ok(value) = digits.parse::<usize>() else {
        return digit_by_digit();
    };
    let mut words = Vec::new();
    let (hundreds, rest) = (value / 100, value % 100);
    if hundreds > 0 {
        words.push(ONES[hundreds].to_owned());
        words.push("hundred".to_owned());
    }
    if rest >= 20 {
        words.push(TENS[rest / 10].to_owned());
        if rest % 10 > 0 {
            words.push(ONES[rest % 10].to_owned());
        }
    } else if rest > 0 || hundreds == 0 {
        words.push(ONES[rest].to_owned());
    }
    words
}

/// A transcript word (whitespace-delimited, outer punctuation already removed) as
/// spoken words: pieces split as in [`split_pieces`], each piece its most likely
/// spoken alternative, a `.` inside the word said "dot", other symbols left out.
/// Dotted single letters (`"I.D"`, `"U.S"`) are letters, not dots.
#[must_use]
pub fn transcript_words(word: &str) -> Vec<String> {
    let pieces = split_pieces(word);
    let dotted_letters = pieces.len() >= 3
        && pieces.iter().enumerate().all(|(i, p)| match p {
            Piece::Word(w) => i % 2 == 0 && w.chars().count() == 1,
            Piece::Symbol('.') => i % 2 == 1,
            _ => false,
        });
    let mut words = Vec::new();
    for piece in &pieces {
        match piece {
            Piece::Symbol('.') if dotted_letters => {}
            Piece::Symbol('.') => words.push("dot".to_owned()),
            Piece::Symbol(_) => {}
            Piece::Word(w) => {
                // Whisper writes acronyms it knows as words in capitals ("DAG", "API"):
                // read a pronounceable one as a word (the term side has both forms).
                let pronounceable_acronym = w.chars().count() >= 3
                    && w.chars().all(char::is_uppercase)
                    && has_vowel(&w.to_lowercase());
                if pronounceable_acronym && abbreviation(&w.to_lowercase()).is_none() {
                    words.push(w.to_lowercase());
                } else if let Some(first) = word_alternatives(w).into_iter().next() {
                    words.extend(first);
                }
            }
            Piece::Number(digits) => words.extend(number_words(digits)),
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(term: &str) -> Vec<String> {
        spoken_forms(term).iter().map(SpokenForm::text).collect()
    }

    #[test]
    fn camel_and_acronym_boundaries_split() {
        let words = |text: &str| -> Vec<String> {
            split_pieces(text)
                .into_iter()
                .map(|p| match p {
                    Piece::Word(w) | Piece::Number(w) => w,
                    Piece::Symbol(c) => c.to_string(),
                })
                .collect()
        };
        assert_eq!(words("getUserById"), ["get", "User", "By", "Id"]);
        assert_eq!(words("HTTPServer2"), ["HTTP", "Server", "2"]);
        assert_eq!(words("vLLM"), ["v", "LLM"]);
        assert_eq!(
            words("docker-compose.yml"),
            ["docker", "-", "compose", ".", "yml"]
        );
        assert_eq!(words("Dr. Müller"), ["Dr", ".", "Müller"]);
    }

    #[test]
    fn identifiers_are_said_word_by_word() {
        assert_eq!(texts("getUserById")[0], "get user by i d");
        assert_eq!(texts("handleWebhookEvent"), ["handle webhook event"]);
        let snake = texts("parse_config_file");
        assert_eq!(
            snake,
            [
                "parse underscore config underscore file",
                "parse config file"
            ]
        );
    }

    #[test]
    fn an_option_s_leading_dashes_are_said_or_not_apart_from_its_inner_dashes() {
        let forms = texts("--schema-only");
        for expected in [
            "dash dash schema dash only",
            "schema only",
            "dash dash schema only",
            "schema dash only",
        ] {
            assert!(
                forms.contains(&expected.to_owned()),
                "{expected} in {forms:?}"
            );
        }
        // Dashes inside a name are one kind: said everywhere or nowhere.
        let forms = texts("cart-api-v-two");
        assert!(
            !forms
                .iter()
                .any(|f| f.contains("dash") && f.matches("dash").count() < 3),
            "{forms:?}"
        );
    }

    #[test]
    fn acronyms_and_unpronounceable_pieces_are_spelled() {
        assert_eq!(texts("vLLM")[0], "v l l m");
        assert_eq!(texts("jq"), ["j q"]);
        assert!(texts("JAX").contains(&"jax".to_owned()));
        assert_eq!(texts("Q3"), ["q three"]);
    }

    #[test]
    fn file_names_say_their_dots_and_abbreviations() {
        let forms = texts("README.md");
        assert_eq!(forms[0], "read me dot m d");
        let compose = texts("docker-compose.yml");
        assert!(
            compose.contains(&"docker compose dot yammel".to_owned()),
            "{compose:?}"
        );
        assert_eq!(texts("NumPy")[0], "num pie");
        assert_eq!(
            texts("kubectl"),
            ["kube control", "kube cuttle", "kube c t l", "kubectl"]
        );
        assert_eq!(texts("mongodb")[0], "mongo d b");
        assert_eq!(texts("happy"), ["happy"]);
    }

    #[test]
    fn library_suffixes_may_be_said_without_their_dot() {
        let next = texts("Next.js");
        assert_eq!(next[0], "next dot j s");
        assert!(next.contains(&"next j s".to_owned()), "{next:?}");
        assert!(texts("Socket.IO").contains(&"socket i o".to_owned()));
        // A file name keeps its dot said.
        assert!(!texts("main.rs").contains(&"main r s".to_owned()));
    }

    #[test]
    fn numbers_become_words() {
        assert_eq!(number_words("3"), ["three"]);
        assert_eq!(number_words("42"), ["forty", "two"]);
        assert_eq!(number_words("100"), ["one", "hundred"]);
        assert_eq!(number_words("2024"), ["two", "zero", "two", "four"]);
        assert_eq!(number_words("07"), ["zero", "seven"]);
    }

    #[test]
    fn transcript_words_follow_the_same_rules() {
        assert_eq!(transcript_words("service.py"), ["service", "dot", "pie"]);
        assert_eq!(transcript_words("I.D"), ["i", "d"]);
        assert_eq!(transcript_words("user_service"), ["user", "service"]);
        assert_eq!(transcript_words("Q3"), ["q", "three"]);
        assert_eq!(transcript_words("DAG"), ["dag"]);
        assert_eq!(transcript_words("ID"), ["i", "d"]);
    }

    #[test]
    fn forms_are_bounded_and_distinct() {
        let forms = spoken_forms("a_b-c/d.e_f-g/h.i_j-k/l.m_n");
        assert!(forms.len() <= MAX_SPOKEN_FORMS);
        let mut seen = std::collections::HashSet::new();
        assert!(forms.iter().all(|f| seen.insert(f.text())));
        assert!(spoken_forms("...").is_empty() || spoken_forms("...")[0].words[0] == "dot");
    }
}
