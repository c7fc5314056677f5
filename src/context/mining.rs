//! Term mining: the words of the context messages a speaker is likely to say and Whisper
//! is likely to misspell.
//!
//! Kept: identifiers (camelCase, PascalCase, snake_case, kebab-case, SCREAMING_CASE),
//! file names and paths, acronyms, capitalised names and other words that are not common
//! words. Dropped: common words (those Whisper spells on its own, see
//! [`is_common_word`]), numbers, URLs, single letters.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use super::Message;

/// What a term looks like; decides how it is said and how much it is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TermKind {
    /// camelCase, PascalCase, snake_case, kebab-case, or letters mixed with digits.
    Identifier,
    /// A file name with an extension (`main.rs`, `.env.example`).
    FileName,
    /// A path or slash-joined name (`src/lib.rs`, `shadcn/ui`).
    Path,
    /// All capitals (`MRI`, `Q3`, `SCREAMING`).
    Acronym,
    /// One capitalised word (`Grafana`, `Saoirse`).
    Name,
    /// One lowercase word (`tokio`, `lisinopril`).
    Word,
    /// Several words (`Dr. Müller`, `New Relic`).
    Phrase,
}

/// Whole words of Whisper's tokenizer vocabulary, lowercased (see the file's header).
const COMMON_WORDS_TEXT: &str = include_str!("common_words.txt");

/// True when `word` (any case) is a common word: one that Whisper's vocabulary holds as
/// a whole word, or a regular inflection of one (`dictates`, `styled`, `evicting`), so
/// Whisper spells it without help.
#[must_use]
pub fn is_common_word(word: &str) -> bool {
    let lower = word.to_lowercase();
    if is_vocabulary_word(&lower) {
        return true;
    }
    // Regular inflections: strip the ending, then try the stem as is and with an "e"
    // ("styl-ed" -> "style", "evict-ing" -> "evict").
    for ending in ["s", "es", "ed", "d", "ing", "ly", "er", "ers", "ies"] {
        if let Some(stem) = lower.strip_suffix(ending)
            && stem.chars().count() >= 3
            && (is_vocabulary_word(stem)
                || is_vocabulary_word(&format!("{stem}e"))
                || (ending == "ies" && is_vocabulary_word(&format!("{stem}y"))))
        {
            return true;
        }
    }
    false
}

/// English words Whisper's vocabulary does not hold whole (see the file's header).
const ENGLISH_WORDS_TEXT: &str = include_str!("english_words.txt");

/// True when `word` in lowercase is an ordinary word: a common word
/// ([`is_common_word`]) or one of an English word list ("flask", "nix", "retool"). A
/// name in lowercase ("upstash", "qdrant") is not.
#[must_use]
pub fn is_ordinary_word(word: &str) -> bool {
    static WORDS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    is_common_word(word)
        || WORDS
            .get_or_init(|| word_list(ENGLISH_WORDS_TEXT))
            .contains(word.to_lowercase().as_str())
}

/// True when the lowercase `word` is a whole word of Whisper's vocabulary.
fn is_vocabulary_word(word: &str) -> bool {
    static WORDS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    WORDS
        .get_or_init(|| word_list(COMMON_WORDS_TEXT))
        .contains(word)
}

/// The words of a word list file: one a line, `#` comment lines and empty ones left out.
fn word_list(text: &'static str) -> HashSet<&'static str> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .collect()
}

/// A term found in the messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinedTerm {
    /// The term as written in the messages.
    pub text: String,
    /// What kind of term it looks like.
    pub kind: TermKind,
}

/// Characters that separate candidate terms in message text (besides whitespace).
fn is_separator(c: char) -> bool {
    matches!(
        c,
        '(' | ')'
            | '['
            | ']'
            | '{'
            | '}'
            | ','
            | ';'
            | '='
            | '"'
            | '`'
            | '<'
            | '>'
            | '!'
            | '?'
            | '*'
            | '|'
            | '&'
            | '+'
            | ':'
            | '$'
            | '%'
            | '^'
            | '~'
            | '\u{201c}'
            | '\u{201d}'
            | '\u{2018}'
    )
}

/// Extracts likely-spoken terms from `messages`, best first: identifiers, file names
/// and paths before names and acronyms before other rare words; within a kind, terms
/// seen more often first, then those of later (more recent) messages, then in text
/// order. Each term once (case-sensitively).
#[must_use]
pub fn mine_terms(messages: &[Message]) -> Vec<MinedTerm> {
    struct Seen {
        kind: TermKind,
        count: usize,
        /// Index of the last message that has it (later messages are more recent).
        last_message: usize,
        /// Position of its first occurrence, in chunks.
        first_position: usize,
    }
    let mut seen: HashMap<String, Seen> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut position = 0usize;
    for (message_index, message) in messages.iter().enumerate() {
        for chunk in message
            .content
            .split(|c: char| c.is_whitespace() || is_separator(c))
        {
            position += 1;
            let Some((text, kind)) = classify(chunk) else {
                continue;
            };
            // A file named after a class names the class too (`identifier_stem`).
            let stem = identifier_stem(&text);
            for (text, kind) in std::iter::once((text, kind)).chain(stem) {
                match seen.entry(text) {
                    Entry::Occupied(mut entry) => {
                        let entry = entry.get_mut();
                        entry.count += 1;
                        entry.last_message = message_index;
                    }
                    Entry::Vacant(entry) => {
                        order.push(entry.key().clone());
                        entry.insert(Seen {
                            kind,
                            count: 1,
                            last_message: message_index,
                            first_position: position,
                        });
                    }
                }
            }
        }
    }
    let mut ranked: Vec<(String, Seen)> = order
        .into_iter()
        .filter_map(|text| seen.remove(&text).map(|s| (text, s)))
        .collect();
    ranked.sort_by(|(_, a), (_, b)| {
        kind_rank(b.kind)
            .cmp(&kind_rank(a.kind))
            .then(b.count.cmp(&a.count))
            .then(b.last_message.cmp(&a.last_message))
            .then(a.first_position.cmp(&b.first_position))
    });
    ranked
        .into_iter()
        .map(|(text, s)| MinedTerm { text, kind: s.kind })
        .collect()
}

/// Higher ranks first: the shapes Whisper gets wrong most often.
fn kind_rank(kind: TermKind) -> u8 {
    match kind {
        TermKind::Identifier | TermKind::FileName | TermKind::Path => 3,
        TermKind::Acronym | TermKind::Name => 2,
        TermKind::Word | TermKind::Phrase => 1,
    }
}

/// Cleans one whitespace/separator-delimited chunk and decides whether it is a term.
fn classify(chunk: &str) -> Option<(String, TermKind)> {
    if chunk.contains("://") || chunk.contains('@') {
        return None; // URLs and e-mail addresses are not dictated as written.
    }
    // Sentence punctuation and quotes around the chunk are not part of a term; a leading
    // dot is (".env"), and so are the dashes of a command-line option ("--schema-only").
    let text = chunk
        .trim_start_matches(['\'', '\u{2019}', '/', '#'])
        .trim_end_matches(['.', '\'', '\u{2019}', '-', '/', '#', '\\']);
    if let Some(option) = command_line_option(text) {
        return Some((option.to_owned(), TermKind::Identifier));
    }
    let text = text.trim_start_matches('-');
    let text = strip_possessive(text);
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    if letters < 2 || text.chars().count() > 100 {
        return None;
    }
    if text
        .chars()
        .any(|c| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '\'' | '\\')))
    {
        return None;
    }
    let kind = match joined_kind(text) {
        Some(joined) => joined?,
        None => word_kind(text, letters)?,
    };
    Some((text.to_owned(), kind))
}

/// The kind of a cleaned chunk joined by `/`, `\`, `.`, `_` or `-` (a path, a file name,
/// an identifier, a phrase), `Some(None)` for a joined chunk that is no term, and `None`
/// for a chunk without those joints.
fn joined_kind(text: &str) -> Option<Option<TermKind>> {
    let alphabetic_parts: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|p| !p.is_empty())
        .collect();
    let all_parts_common = alphabetic_parts
        .iter()
        .all(|p| is_common_word(p) || p.chars().count() == 1);

    if text.contains('/') || text.contains('\\') {
        // A path is a term even when every part is a common word
        // ("internal/auth/token.go"): Whisper spells the words, never the joining. Not
        // two common words and a slash ("and/or", "client/server"): prose.
        let parts = text.split(['/', '\\']).filter(|p| !p.is_empty()).count();
        let file = text
            .rsplit(['/', '\\'])
            .next()
            .is_some_and(|last| file_name_kind(last).is_some());
        let path = !all_parts_common || parts >= 3 || file;
        return Some(path.then_some(TermKind::Path));
    }
    if let Some(kind) = file_name_kind(text) {
        return Some(Some(kind));
    }
    if text.contains('.') {
        return Some(None); // "e.g", "1.2.3", "Dr.Who" style chunks: not dictated terms.
    }
    if text.contains('_') {
        return Some(Some(TermKind::Identifier));
    }
    if text.contains('-') {
        // kebab-case identifiers; ordinary hyphenated words ("well-known") are common.
        let looks_numeric = alphabetic_parts
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_digit()) || p.len() == 1);
        // kebab-case of common words ("checkout-service"): Whisper spells the words but
        // not the joining; ranked last, as a phrase, so that it never crowds out terms
        // Whisper cannot spell. Ordinary hyphenated words ("well-known") join them, which
        // costs nothing: they are only written where their words are said.
        let kind = if all_parts_common {
            TermKind::Phrase
        } else {
            TermKind::Identifier
        };
        return Some((!looks_numeric).then_some(kind));
    }
    None
}

/// The kind of one cleaned word of `letters` letters by its capitals and digits (an
/// acronym, an identifier, a name, a rare word), or `None` for an ordinary word.
fn word_kind(text: &str, letters: usize) -> Option<TermKind> {
    let has_digit = text.chars().any(|c| c.is_ascii_digit());
    let upper = text.chars().filter(|c| c.is_uppercase()).count();
    let first_upper = text.chars().next().is_some_and(char::is_uppercase);
    let inner_upper = text.chars().skip(1).any(char::is_uppercase);
    if upper == letters && letters >= 2 {
        // All capitals: an acronym ("MRI", "Q3") or SCREAMING word; a few are ordinary.
        let ordinary = matches!(
            text,
            "OK" | "AM" | "PM" | "TV" | "OR" | "AND" | "NOT" | "THE"
        );
        return (!ordinary).then_some(TermKind::Acronym);
    }
    if inner_upper || has_digit {
        // camelCase, PascalCase, "vLLM", "k8s", "gpt4".
        return Some(TermKind::Identifier);
    }
    if is_common_word(text) {
        return None;
    }
    if first_upper {
        Some(TermKind::Name)
    } else if letters >= 3 {
        Some(TermKind::Word)
    } else {
        None
    }
}

/// The class a file is named after (`ShipmentTracker` of `src/ShipmentTracker.kt`,
/// `NavBar` of `NavBar.tsx`: the file-per-class convention of Java, Kotlin, C#, Swift
/// and components), as a term of its own: a speaker names the class as often as the
/// file ("the shipment tracker class"). Only a camelCase or PascalCase stem: a
/// snake_case module (`csv_io.py`) is named by its file, and its short stem would be
/// one more sound-alike of the identifiers beside it (`parse_csv_header`); not a common
/// word (`main.go`) or a name (`Next.js`).
fn identifier_stem(text: &str) -> Option<(String, TermKind)> {
    let file = text.rsplit(['/', '\\']).next()?;
    file_name_kind(file)?;
    let (stem, _) = file.rsplit_once('.')?;
    let camel_case = stem.chars().all(char::is_alphanumeric)
        && stem.chars().skip(1).any(char::is_uppercase)
        && stem.chars().any(char::is_lowercase);
    camel_case.then(|| (stem.to_owned(), TermKind::Identifier))
}

/// A command-line option as written: `--` or `-` then a letter, then letters, digits and
/// dashes (`--schema-only`, `-rf`; not a dash used as punctuation, nor `--` alone).
fn command_line_option(text: &str) -> Option<&str> {
    let name = text.strip_prefix("--").or_else(|| text.strip_prefix('-'))?;
    let starts_with_letter = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    let letters = name.chars().filter(char::is_ascii_alphabetic).count();
    let valid = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    (starts_with_letter && letters >= 2 && valid && !name.ends_with('-')).then_some(text)
}

/// `Priyanka's` -> `Priyanka`.
fn strip_possessive(text: &str) -> &str {
    for suffix in ["'s", "\u{2019}s"] {
        if let Some(stem) = text.strip_suffix(suffix)
            && stem.chars().count() >= 2
        {
            return stem;
        }
    }
    text
}

/// A file name: a stem (or a leading dot) and an extension of 1 to 5 letters or digits
/// with at least one letter (`main.rs`, `docker-compose.yml`, `Next.js`); a lowercase
/// one may have up to 8 (`schema.prisma`, `build.gradle`, `App.svelte`), a hidden file
/// (`.env.example`, `.gitignore`) up to 12.
fn file_name_kind(text: &str) -> Option<TermKind> {
    let (stem, extension) = text.rsplit_once('.')?;
    let longest = if text.starts_with('.') {
        12
    } else if extension.chars().all(|c| c.is_ascii_lowercase()) {
        8
    } else {
        5
    };
    let extension_ok = (1..=longest).contains(&extension.chars().count())
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && extension.chars().any(|c| c.is_ascii_alphabetic());
    let stem_letters = stem.chars().filter(|c| c.is_alphabetic()).count();
    // "e.g", "i.e": every part one letter.
    let single_letter_parts = text.split('.').all(|p| p.chars().count() <= 1);
    (extension_ok && (stem_letters >= 1 || stem.is_empty()) && !single_letter_parts)
        .then_some(TermKind::FileName)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mined(text: &str) -> Vec<String> {
        mine_terms(&[Message::user(text)])
            .into_iter()
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn identifiers_and_files_are_mined_common_words_are_not() {
        let terms =
            mined("Editing user_service.py; functions: getUserById, listUsers, deleteUser.");
        assert_eq!(
            terms,
            ["user_service.py", "getUserById", "listUsers", "deleteUser"]
        );
    }

    #[test]
    fn a_file_named_after_an_identifier_gives_the_identifier_too() {
        assert_eq!(
            mined("Files open: ShipmentTracker.kt, src/components/NavBar.tsx"),
            [
                "ShipmentTracker.kt",
                "ShipmentTracker",
                "src/components/NavBar.tsx",
                "NavBar"
            ]
        );
        // Not a stem that is a common word or a name.
        assert_eq!(
            mined("Open main.go, index.tsx, csv_io.py and Next.js"),
            ["main.go", "index.tsx", "csv_io.py", "Next.js"]
        );
    }

    #[test]
    fn code_is_split_at_its_punctuation() {
        let terms = mined("def train_model(data, learning_rate=1e-3, epochs=10):");
        assert!(terms.contains(&"train_model".to_owned()), "{terms:?}");
        assert!(terms.contains(&"learning_rate".to_owned()), "{terms:?}");
        assert!(
            !terms
                .iter()
                .any(|t| t == "data" || t == "def" || t.contains("1e")),
            "{terms:?}"
        );
    }

    #[test]
    fn names_acronyms_and_rare_words_are_mined() {
        let terms =
            mined("RAG prototype: LangChain plus Chroma, maybe Milvus later. Rust uses tokio.");
        for expected in ["LangChain", "RAG", "Chroma", "Milvus", "tokio"] {
            assert!(
                terms.contains(&expected.to_owned()),
                "{expected} in {terms:?}"
            );
        }
        for dropped in ["prototype", "plus", "maybe", "later", "Rust", "uses"] {
            assert!(
                !terms.contains(&dropped.to_owned()),
                "{dropped} in {terms:?}"
            );
        }
    }

    #[test]
    fn paths_hidden_files_and_kebab_case() {
        let terms =
            mined("Repo files: docker-compose.yml, Dockerfile, .env.example and/or shadcn/ui.");
        for expected in [
            "docker-compose.yml",
            ".env.example",
            "shadcn/ui",
            "Dockerfile",
        ] {
            assert!(
                terms.contains(&expected.to_owned()),
                "{expected} in {terms:?}"
            );
        }
        assert!(!terms.contains(&"and/or".to_owned()));
        // Paths of common words: Whisper writes the words, never the path.
        assert_eq!(
            mined("Module: internal/auth/token.go, docs/api/index, client/server and yes/no."),
            ["internal/auth/token.go", "docs/api/index"]
        );
        assert!(mined("a well-known fact").iter().all(|t| t == "well-known"));
    }

    #[test]
    fn kebab_case_of_common_words_and_options_are_mined_after_identifiers() {
        let terms = mined("Services: checkout-service, cart-api. Run pg_dump --schema-only -rf.");
        assert_eq!(
            terms,
            [
                "cart-api",
                "pg_dump",
                "--schema-only",
                "-rf",
                "checkout-service"
            ]
        );
        // A dash as punctuation, or alone, is no option.
        assert!(
            mined("well - then -- fine -3").is_empty(),
            "{:?}",
            mined("well - then -- fine -3")
        );
        let long_extensions = mined("Edit schema.prisma, App.svelte and build.gradle.");
        for expected in ["schema.prisma", "App.svelte", "build.gradle"] {
            assert!(
                long_extensions.contains(&expected.to_owned()),
                "{expected} in {long_extensions:?}"
            );
        }
    }

    #[test]
    fn noise_is_not_mined() {
        assert!(
            mined("see https://example.com/a_b or mail me@example.com, e.g. 1.2.3 OK").is_empty()
        );
        assert_eq!(mined("Ask Priyanka's team."), ["Priyanka"]);
    }

    #[test]
    fn repeated_and_recent_terms_rank_first_within_a_kind() {
        let messages = [
            Message::user("Milvus and Qdrant"),
            Message::user("Qdrant again"),
        ];
        let terms: Vec<String> = mine_terms(&messages).into_iter().map(|t| t.text).collect();
        assert_eq!(terms, ["Qdrant", "Milvus"]);
    }

    #[test]
    fn common_words_come_from_the_vocabulary() {
        assert!(is_common_word("the"));
        assert!(is_common_word("Monday"));
        assert!(!is_common_word("Grafana"));
        assert!(!is_common_word("tokio"));
        assert!(is_common_word("dictates"));
        assert!(is_common_word("styled"));
        assert!(!is_common_word("axum"));
    }

    #[test]
    fn ordinary_words_include_english_words_whisper_spells_in_pieces() {
        for word in ["flask", "Nix", "retool", "the", "dictates"] {
            assert!(is_ordinary_word(word), "{word}");
        }
        for name in ["upstash", "Qdrant", "tailscale", "plavix", "séresta"] {
            assert!(!is_ordinary_word(name), "{name}");
        }
    }
}
