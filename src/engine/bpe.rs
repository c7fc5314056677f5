//! Whisper's canonical tokenization: byte-level BPE in the tiktoken style, where a
//! token's id is its merge rank.
//!
//! whisper.cpp's own `whisper_tokenize` picks the longest vocabulary entry at each
//! position, which is not how the model was trained: the decoder writes the tokens the
//! BPE merges produce. Decode-time biasing must follow the decoder's tokens, so the
//! terms are tokenized here as the training data was: split into words the way GPT-2's
//! pattern does (`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+`),
//! then, within each word, repeatedly merge the adjacent pair whose concatenation has
//! the lowest rank.

use std::collections::HashMap;

/// A byte-level BPE vocabulary: the bytes of every text token and its id (= rank).
#[derive(Debug, Default)]
pub struct BpeVocabulary {
    ranks: HashMap<Vec<u8>, i32>,
    /// Token bytes by id (empty for ids that are not text tokens).
    bytes: Vec<Vec<u8>>,
    /// The longest token, in bytes.
    longest: usize,
}

impl BpeVocabulary {
    /// A vocabulary from `(bytes, id)` pairs; for duplicate byte strings the lowest id wins.
    /// Negative ids are ignored.
    pub fn new(entries: impl IntoIterator<Item = (Vec<u8>, i32)>) -> Self {
        let mut ranks: HashMap<Vec<u8>, i32> = HashMap::new();
        let mut by_id: Vec<Vec<u8>> = Vec::new();
        let mut longest = 0;
        for (bytes, id) in entries {
            let Ok(index) = usize::try_from(id) else {
                continue;
            };
            if by_id.len() <= index {
                by_id.resize(index + 1, Vec::new());
            }
            by_id[index].clone_from(&bytes);
            longest = longest.max(bytes.len());
            ranks
                .entry(bytes)
                .and_modify(|rank| *rank = (*rank).min(id))
                .or_insert(id);
        }
        BpeVocabulary {
            ranks,
            bytes: by_id,
            longest,
        }
    }

    /// The id of the token whose bytes are exactly `bytes`.
    #[must_use]
    pub fn id_of(&self, bytes: &[u8]) -> Option<i32> {
        self.ranks.get(bytes).copied()
    }

    /// The bytes of token `id` (empty for special and unknown tokens).
    #[must_use]
    pub fn bytes_of(&self, id: i32) -> &[u8] {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.bytes.get(i))
            .map_or(&[], Vec::as_slice)
    }

    /// The length of the longest token in bytes.
    #[must_use]
    pub fn longest_token(&self) -> usize {
        self.longest
    }

    /// How many entries it has.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ranks.len()
    }

    /// True when it has no entries.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    /// The token ids of `text`, or `None` when some byte has no token (a vocabulary
    /// without the 256 single-byte tokens).
    #[must_use]
    pub fn encode(&self, text: &str) -> Option<Vec<i32>> {
        let mut tokens = Vec::new();
        for word in split_words(text) {
            tokens.extend(self.encode_word(word.as_bytes())?);
        }
        Some(tokens)
    }

    fn encode_word(&self, word: &[u8]) -> Option<Vec<i32>> {
        if let Some(&id) = self.ranks.get(word) {
            return Some(vec![id]);
        }
        // Byte ranges of the current parts; merge the best-ranked adjacent pair until
        // no adjacent pair is a token. Words are short, so quadratic is fine.
        let mut parts: Vec<(usize, usize)> = (0..word.len()).map(|i| (i, i + 1)).collect();
        loop {
            let best = parts
                .windows(2)
                .enumerate()
                .filter_map(|(i, pair)| {
                    let rank = self.ranks.get(&word[pair[0].0..pair[1].1])?;
                    Some((*rank, i))
                })
                .min();
            let Some((_, i)) = best else { break };
            parts[i].1 = parts[i + 1].1;
            parts.remove(i + 1);
        }
        parts
            .into_iter()
            .map(|(start, end)| self.ranks.get(&word[start..end]).copied())
            .collect()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CharClass {
    Letter,
    Number,
    Space,
    Other,
}

fn class_of(c: char) -> CharClass {
    if c.is_alphabetic() {
        CharClass::Letter
    } else if c.is_numeric() {
        CharClass::Number
    } else if c.is_whitespace() {
        CharClass::Space
    } else {
        CharClass::Other
    }
}

/// GPT-2's pre-tokenization: contractions, then runs of letters, of digits, or of other
/// symbols, each optionally preceded by one space; whitespace runs give their last
/// space to the word that follows.
#[must_use]
pub fn split_words(text: &str) -> Vec<&str> {
    const CONTRACTIONS: [&str; 7] = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end_of = |i: usize| chars.get(i).map_or(text.len(), |&(at, _)| at);
    let mut words = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let start = chars[i].0;
        let rest = &text[start..];
        if let Some(c) = CONTRACTIONS.iter().find(|c| rest.starts_with(*c)) {
            words.push(&rest[..c.len()]);
            i += c.chars().count();
            continue;
        }
        let (_, c) = chars[i];
        let mut j = i;
        // An optional single space before a non-space run.
        if c == ' '
            && chars
                .get(i + 1)
                .is_some_and(|&(_, next)| class_of(next) != CharClass::Space)
        {
            j += 1;
        }
        let class = class_of(chars[j].1);
        if class == CharClass::Space {
            // `\s+(?!\S)|\s+`: a whitespace run, leaving its last char to a following word.
            let mut k = j;
            while chars
                .get(k)
                .is_some_and(|&(_, ch)| class_of(ch) == CharClass::Space)
            {
                k += 1;
            }
            if k < chars.len() && k - j > 1 && chars[k - 1].1 == ' ' {
                k -= 1;
            }
            words.push(&text[start..end_of(k)]);
            i = k;
            continue;
        }
        let mut k = j + 1;
        while chars.get(k).is_some_and(|&(_, ch)| class_of(ch) == class) {
            k += 1;
        }
        words.push(&text[start..end_of(k)]);
        i = k;
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_gpt2() {
        assert_eq!(
            split_words(" user_service.py and getUserById"),
            [" user", "_", "service", ".", "py", " and", " getUserById"]
        );
        assert_eq!(
            split_words("it's  v2 ok"),
            ["it", "'s", " ", " v", "2", " ok"]
        );
        assert_eq!(split_words(" Dr. Müller"), [" Dr", ".", " Müller"]);
    }

    #[test]
    fn merges_follow_rank_order() {
        // Ranks: "a"=0, "b"=1, "c"=2, "bc"=3, "ab"=4, "abc"=5. For "abc" the pair
        // "bc" (3) merges before "ab" (4), then "a"+"bc" is not a token.
        let vocabulary = BpeVocabulary::new([
            (b"a".to_vec(), 0),
            (b"b".to_vec(), 1),
            (b"c".to_vec(), 2),
            (b"bc".to_vec(), 3),
            (b"ab".to_vec(), 4),
            (b"abcd".to_vec(), 5),
            (b"d".to_vec(), 6),
        ]);
        assert_eq!(vocabulary.encode("abc"), Some(vec![0, 3]));
        assert_eq!(vocabulary.encode("abcd"), Some(vec![5]));
        assert_eq!(vocabulary.encode("x"), None);
    }
}
