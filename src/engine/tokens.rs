//! The model's vocabulary as the decoder sees it: text tokens (with their bytes, for
//! canonical BPE and for the biasing matcher), Whisper's special tokens, timestamp
//! tokens, and the tokens a transcript never contains.

use whisper_rs::WhisperContext;

use super::bpe::BpeVocabulary;
use crate::context::Language;

/// Vocabulary size of the large-v3 models, the first with a 100th language (`yue`).
const VOCAB_WITH_CANTONESE: usize = 51_866;
/// Seconds per timestamp token (Whisper: 1500 steps over 30 s).
pub(crate) const SECS_PER_TIMESTAMP: f64 = 0.02;

/// Punctuation and symbols Whisper writes for non-speech (OpenAI's `non_speech_tokens`,
/// also suppressed by whisper.cpp's `suppress_nst`): each alone and after a space.
const NON_SPEECH: &[&str] = &[
    "\"",
    "#",
    "(",
    ")",
    "*",
    "+",
    "/",
    ":",
    ";",
    "<",
    "=",
    ">",
    "@",
    "[",
    "\\",
    "]",
    "^",
    "_",
    "`",
    "{",
    "|",
    "}",
    "~",
    "「",
    "」",
    "『",
    "』",
    "<<",
    ">>",
    "<<<",
    ">>>",
    "--",
    "---",
    "-(",
    "-[",
    "('",
    "(\"",
    "((",
    "))",
    "(((",
    ")))",
    "[[",
    "]]",
    "{{",
    "}}",
    "♪♪",
    "♪♪♪",
    "♩",
    "♪",
    "♫",
    "♬",
    "♭",
    "♮",
    "♯",
];

/// Ids of Whisper's special tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpecialTokens {
    /// `<|endoftext|>`: the first special token; text tokens are below it.
    pub(crate) eot: i32,
    /// `<|startoftranscript|>`.
    pub(crate) sot: i32,
    /// `<|startofprev|>`: the previous text (the prompt) follows.
    pub(crate) prev: i32,
    /// `<|startoflm|>`.
    pub(crate) solm: i32,
    /// `<|nospeech|>` (`<|nocaptions|>`).
    pub(crate) no_speech: i32,
    /// `<|notimestamps|>`.
    pub(crate) no_timestamps: i32,
    /// `<|0.00|>`: the first timestamp token; every token from here on is a timestamp.
    pub(crate) timestamp_begin: i32,
    /// `<|transcribe|>`.
    pub(crate) transcribe: i32,
    /// `<|translate|>`.
    pub(crate) translate: i32,
    /// The first language token (`<|en|>`), `None` for English-only models.
    pub(crate) first_language: Option<i32>,
    /// Language tokens the model has: 99, or 100 for large-v3 models (`yue`).
    pub(crate) language_count: usize,
}

/// The decoder's vocabulary: special tokens, text-token bytes and suppressed tokens.
#[derive(Debug)]
pub(crate) struct Vocabulary {
    pub(crate) special: SpecialTokens,
    bpe: BpeVocabulary,
    n_vocab: usize,
    /// Tokens never sampled in a transcript (non-speech symbols, task and language
    /// tokens, start markers), sorted.
    suppressed: Vec<i32>,
    /// The lone space `" "`, suppressed as a transcript's first token (a blank start).
    space: Option<i32>,
}

impl Vocabulary {
    pub(crate) fn new(context: &WhisperContext) -> Self {
        let n_vocab = usize::try_from(context.n_vocab()).unwrap_or(0);
        let multilingual = context.is_multilingual();
        let special = SpecialTokens {
            eot: context.token_eot(),
            sot: context.token_sot(),
            prev: context.token_prev(),
            solm: context.token_solm(),
            no_speech: context.token_nosp(),
            no_timestamps: context.token_not(),
            timestamp_begin: context.token_beg(),
            transcribe: context.token_transcribe(),
            translate: context.token_translate(),
            first_language: multilingual.then(|| context.token_lang(0)),
            language_count: if n_vocab >= VOCAB_WITH_CANTONESE {
                100
            } else {
                99
            },
        };
        let bpe = BpeVocabulary::new((0..special.eot).filter_map(|id| {
            let bytes = context.token_to_bytes(id).ok()?;
            Some((bytes.to_vec(), id))
        }));
        Self::from_parts(special, bpe, n_vocab)
    }

    /// A vocabulary from its parts (tests build small ones).
    pub(crate) fn from_parts(special: SpecialTokens, bpe: BpeVocabulary, n_vocab: usize) -> Self {
        let mut suppressed: Vec<i32> = NON_SPEECH
            .iter()
            .flat_map(|symbol| [symbol.to_string(), format!(" {symbol}")])
            .filter_map(|text| bpe.id_of(text.as_bytes()))
            .collect();
        // Hyphens and apostrophes between words, never at a word's start.
        suppressed.extend(
            ["-", "'"]
                .iter()
                .filter_map(|s| bpe.id_of(format!(" {s}").as_bytes())),
        );
        suppressed.extend([
            special.sot,
            special.prev,
            special.solm,
            special.no_speech,
            special.no_timestamps,
            special.transcribe,
            special.translate,
        ]);
        if let Some(first) = special.first_language {
            let count = i32::try_from(special.language_count).unwrap_or(0);
            suppressed.extend(first..first + count);
        }
        // Whatever lies between the language tokens and the timestamps is special too.
        suppressed.extend((special.eot + 1)..special.timestamp_begin);
        suppressed.retain(|&t| t != special.eot && usize::try_from(t).is_ok_and(|t| t < n_vocab));
        suppressed.sort_unstable();
        suppressed.dedup();
        let space = bpe.id_of(b" ");
        Vocabulary {
            special,
            bpe,
            n_vocab,
            suppressed,
            space,
        }
    }

    pub(crate) fn n_vocab(&self) -> usize {
        self.n_vocab
    }

    pub(crate) fn bpe(&self) -> &BpeVocabulary {
        &self.bpe
    }

    pub(crate) fn suppressed(&self) -> &[i32] {
        &self.suppressed
    }

    pub(crate) fn space(&self) -> Option<i32> {
        self.space
    }

    /// True for tokens that write text (below `<|endoftext|>`).
    pub(crate) fn is_text(&self, token: i32) -> bool {
        (0..self.special.eot).contains(&token)
    }

    /// True for timestamp tokens.
    pub(crate) fn is_timestamp(&self, token: i32) -> bool {
        token >= self.special.timestamp_begin
    }

    /// The time a timestamp token stands for, in timestamp steps (0.02 s).
    pub(crate) fn timestamp_index(&self, token: i32) -> Option<usize> {
        usize::try_from(token - self.special.timestamp_begin).ok()
    }

    /// The token of timestamp step `index`.
    #[cfg(test)]
    pub(crate) fn timestamp_token(&self, index: usize) -> i32 {
        self.special.timestamp_begin
            + i32::try_from(index).unwrap_or(i32::MAX - self.special.timestamp_begin)
    }

    /// The language token of `language`, `None` on English-only models or for a
    /// language this model does not have.
    pub(crate) fn language_token(&self, language: Language) -> Option<i32> {
        let first = self.special.first_language?;
        language
            .available_in(self.special.language_count)
            .then(|| first + language.whisper_id())
    }

    /// The task prefix a transcript in `language` starts with:
    /// `<|startoftranscript|> <|lang|> <|transcribe|>` (just SOT on English-only models),
    /// then `<|notimestamps|>` when decoding untimed.
    pub(crate) fn task_prefix(&self, language: Language, timestamps: bool) -> Vec<i32> {
        let mut prefix = vec![self.special.sot];
        if let Some(token) = self.language_token(language) {
            prefix.push(token);
            prefix.push(self.special.transcribe);
        }
        if !timestamps {
            prefix.push(self.special.no_timestamps);
        }
        prefix
    }

    /// The bytes the text tokens among `tokens` write (special tokens write nothing).
    pub(crate) fn bytes_of(&self, tokens: &[i32]) -> Vec<u8> {
        tokens
            .iter()
            .filter(|&&t| self.is_text(t))
            .flat_map(|&t| self.bpe.bytes_of(t).iter().copied())
            .collect()
    }

    /// The text `tokens` write (invalid UTF-8 replaced).
    pub(crate) fn text_of(&self, tokens: &[i32]) -> String {
        String::from_utf8_lossy(&self.bytes_of(tokens)).into_owned()
    }
}

/// One segment of a decode: its text tokens and, when timed, its start and end
/// (timestamp steps).
pub(crate) struct TokenSegment<'t> {
    pub(crate) start: Option<usize>,
    pub(crate) end: Option<usize>,
    pub(crate) tokens: &'t [i32],
}

/// The segments of a decode's tokens: untimed, one; timed, one per pair of timestamps
/// (a last segment without its closing timestamp ends where its text ends).
pub(crate) fn segments<'t>(vocabulary: &Vocabulary, tokens: &'t [i32]) -> Vec<TokenSegment<'t>> {
    if !tokens.first().is_some_and(|&t| vocabulary.is_timestamp(t)) {
        return vec![TokenSegment {
            start: None,
            end: None,
            tokens,
        }];
    }
    let mut out = Vec::new();
    let mut start: Option<(usize, usize)> = None; // (token index, timestamp)
    for (i, &token) in tokens.iter().enumerate() {
        let Some(stamp) = vocabulary
            .is_timestamp(token)
            .then(|| vocabulary.timestamp_index(token))
            .flatten()
        else {
            continue;
        };
        match start {
            None => start = Some((i, stamp)),
            Some((from, begin)) => {
                if i > from + 1 {
                    out.push(TokenSegment {
                        start: Some(begin),
                        end: Some(stamp),
                        tokens: &tokens[from + 1..i],
                    });
                }
                start = Some((i, stamp));
            }
        }
    }
    if let Some((from, begin)) = start
        && from + 1 < tokens.len()
    {
        out.push(TokenSegment {
            start: Some(begin),
            end: None,
            tokens: &tokens[from + 1..],
        });
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A tiny vocabulary with Whisper's layout: text tokens, EOT, specials, languages,
    /// timestamps.
    pub(crate) fn tiny_vocabulary() -> Vocabulary {
        vocabulary_of(&[
            " ", "a", "b", " a", " b", "ab", "_", " _", "-", " -", "c", ".", "!",
        ])
    }

    /// A vocabulary whose text tokens are `texts` (ids in order), then EOT, the specials,
    /// three languages and the timestamps, in Whisper's layout.
    pub(crate) fn vocabulary_of(texts: &[&str]) -> Vocabulary {
        let bpe = BpeVocabulary::new(
            texts
                .iter()
                .zip(0..)
                .map(|(text, id)| (text.as_bytes().to_vec(), id)),
        );
        let eot = i32::try_from(texts.len()).unwrap_or(0);
        let special = SpecialTokens {
            eot,
            sot: eot + 1,
            first_language: Some(eot + 2),
            language_count: 3,
            translate: eot + 5,
            transcribe: eot + 6,
            solm: eot + 7,
            prev: eot + 8,
            no_speech: eot + 9,
            no_timestamps: eot + 10,
            timestamp_begin: eot + 11,
        };
        Vocabulary::from_parts(special, bpe, usize::try_from(eot + 11 + 1501).unwrap_or(0))
    }

    #[test]
    fn suppression_covers_symbols_and_specials_but_not_text_or_eot() {
        let v = tiny_vocabulary();
        let s = v.suppressed();
        for token in [
            6,
            7,
            9,
            v.special.sot,
            v.special.no_timestamps,
            v.special.prev,
            15,
            16,
            17,
        ] {
            assert!(s.contains(&token), "{token} not suppressed");
        }
        for token in [0, 1, 3, 8, 11, v.special.eot, v.special.timestamp_begin] {
            assert!(!s.contains(&token), "{token} suppressed");
        }
        assert_eq!(v.timestamp_index(v.timestamp_token(7)), Some(7));
    }

    #[test]
    fn text_skips_special_tokens() {
        let v = tiny_vocabulary();
        assert_eq!(
            v.text_of(&[v.special.sot, 3, 4, v.timestamp_token(5), 11, v.special.eot]),
            " a b."
        );
    }

    #[test]
    fn timed_tokens_split_into_segments() {
        let v = tiny_vocabulary();
        let t = |i| v.timestamp_token(i);
        let tokens = [t(0), 3, 4, t(50), t(50), 1, t(120), t(130), 2];
        let segs = segments(&v, &tokens);
        assert_eq!(segs.len(), 3);
        assert_eq!(
            (segs[0].start, segs[0].end, segs[0].tokens),
            (Some(0), Some(50), &[3, 4][..])
        );
        assert_eq!((segs[1].start, segs[1].end), (Some(50), Some(120)));
        assert_eq!(
            (segs[2].start, segs[2].end, segs[2].tokens),
            (Some(130), None, &[2][..])
        );
        let untimed = segments(&v, &[3, 4]);
        assert_eq!((untimed.len(), untimed[0].start), (1, None));
    }
}
