//! The context layers on real audio and the real engine: dictation cases of
//! ../shared/eval/context come out with their terms, and context naming terms that
//! are not spoken inserts none of them.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ctxscribe::context::ContextLayers;
use ctxscribe::context::SoundsLike;
use ctxscribe::correction::contains_word;
use ctxscribe::engine::{EngineRequest, Stop, WhisperEngine, WindowPasses, transcribe_judged};
use ctxscribe::{Dictionary, Languages, Message};

fn transcribe_case(id: &str, messages: Vec<Message>, dictionary: &[&str]) -> String {
    let path = shared_dir().join(format!("eval/context/audio/{id}.wav"));
    transcribe_file(&path, messages, dictionary)
}

fn transcribe_file(path: &std::path::Path, messages: Vec<Message>, dictionary: &[&str]) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let transcript = base_transcriber()
        .transcribe_blocking(
            bytes.into(),
            messages,
            Languages::Auto,
            Dictionary::from_terms(dictionary).expect("valid dictionary"),
        )
        .expect("transcribe");
    // The context rewrites words of the plain decode: the segments carry the final text.
    assert_segments_cover(&transcript);
    transcript.text
}

#[test]
fn spoken_identifiers_are_written_as_in_the_messages() {
    let text = transcribe_case(
        "d12",
        vec![Message::user(
            "def train_model(data, learning_rate=1e-3, epochs=10):",
        )],
        &[],
    );
    assert!(text.contains("train_model"), "{text}");
    assert!(text.contains("learning_rate"), "{text}");
    assert!(!text.contains("epochs"), "{text}");
}

#[test]
fn dictionary_terms_that_are_not_spoken_are_not_inserted() {
    let dictionary = ["PyTorch", "TensorFlow", "JAX", "NumPy"];
    let text = transcribe_case("d11", vec![], &dictionary);
    assert_eq!(
        norm_words(&text),
        norm_words("Let's review the numbers again on Monday.")
    );
    for term in dictionary {
        assert!(!text.contains(term), "{term} in {text}");
    }
}

/// benches/ctxset/unrelated_terms.txt: 1000 terms, one per line.
fn unrelated_terms() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/ctxset/unrelated_terms.txt"),
    )
    .expect("the unrelated term list")
}

/// The largest context a request may carry (1000 unrelated dictionary terms and 64 KiB
/// of messages) on a sentence that says none of them: the same words as without it.
#[test]
fn the_largest_unrelated_context_inserts_nothing() {
    let list = unrelated_terms();
    let terms: Vec<&str> = list.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(terms.len(), 1000);
    // Four messages of just under 16 KiB each (the limit per message; 64 KiB in all),
    // each starting at another quarter of the list (counted in characters: some terms
    // are not ASCII).
    let prose: Vec<char> = terms.join(", ").chars().collect();
    let messages: Vec<Message> = (0..4)
        .map(|part| {
            let mut text = String::new();
            for &c in prose[prose.len() / 4 * part..].iter().cycle() {
                if text.len() + c.len_utf8() > 16_000 {
                    break;
                }
                text.push(c);
            }
            Message::user(text)
        })
        .collect();
    let sentence = "Let's review the numbers again on Monday.";
    let started = Instant::now();
    let text = transcribe_case("d11", messages, &terms);
    assert_eq!(norm_words(&text), norm_words(sentence), "{text}");
    eprintln!("1000 terms and 64 KiB of messages: {:?}", started.elapsed());
}

/// The largest `sounds_like` a request may carry, spoofed: 1000 dictionary terms, each
/// said (so the caller claims) like 10 ordinary words and phrases of the sentence ("review",
/// "the numbers", "on monday"), on the sentence that says them: the same words as without
/// it. Every word sounds like a term; the model reads them as the words they are.
#[test]
fn a_spoofed_sounds_like_of_a_thousand_terms_inserts_nothing() {
    let list = unrelated_terms();
    let terms: Vec<&str> = list.lines().filter(|l| !l.trim().is_empty()).collect();
    let forms = [
        "review",
        "numbers",
        "monday",
        "again",
        "lets review",
        "the numbers",
        "numbers again",
        "again on",
        "on monday",
        "review the numbers",
    ];
    let pairs = terms.iter().map(|term| (*term, forms));
    let dictionary = Dictionary::from_terms(&terms)
        .and_then(|d| d.with_sounds_like(SoundsLike::from_pairs(pairs)?))
        .expect("valid");
    assert_eq!(dictionary.sounds_like().entries().len(), 1000);
    let path = shared_dir().join("eval/context/audio/d11.wav");
    let bytes = std::fs::read(&path).expect("d11");
    let started = Instant::now();
    let text = base_transcriber()
        .transcribe_blocking(bytes.into(), vec![], Languages::Auto, dictionary)
        .expect("transcribe")
        .text;
    let sentence = "Let's review the numbers again on Monday.";
    assert_eq!(norm_words(&text), norm_words(sentence), "{text}");
    eprintln!(
        "1000 terms x 10 spoofed spoken forms: {:?}",
        started.elapsed()
    );
}

/// The 1000 unrelated terms `benches/realctx` gives every real clip (each LibriSpeech
/// rare-word list of ../shared/eval/real, then benches/ctxset/unrelated_terms.txt, less
/// the clip's own words) and its messages, on a clip whose plain decode glues "tear a thin"
/// into one unknown word ("Tarathin"). The term pass lists the terms that word sounds
/// like; biased towards them, it wrote "tarr, thin", and the merge took the term for the
/// sound it was chosen for. A list longer than the glossary is not biased: none of the
/// terms comes out.
#[test]
fn a_long_list_inserts_no_term_its_glossary_picked_by_sound() {
    let real = shared_dir().join("eval/real");
    let read = |name: &str| {
        std::fs::read_to_string(real.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let spoken = ["tear", "thin", "sheep", "from", "the", "other", "pat"];
    let mut pool: Vec<String> = Vec::new();
    let fbai = read("librispeech_fbai_subset.tsv");
    let lists = fbai
        .lines()
        .skip(1)
        .filter_map(|row| row.split('\t').nth(6));
    let unrelated = unrelated_terms();
    let listed = lists
        .flat_map(|list| serde_json::from_str::<Vec<String>>(list).expect("a JSON list of terms"));
    for term in listed.chain(unrelated.lines().map(str::trim).map(str::to_owned)) {
        if !term.is_empty()
            && !pool.contains(&term)
            && !spoken.contains(&term.to_lowercase().as_str())
        {
            pool.push(term);
        }
    }
    pool.truncate(1000);
    assert_eq!(pool.len(), 1000);
    assert!(
        pool.iter().any(|t| t == "tarr"),
        "the term the biased pass wrote"
    );
    let messages = vec![
        Message::system("The user dictates notes about the code they are editing."),
        Message::user(
            "Editing billing_worker.py and invoice_export.ts; see docker-compose.yml. \
             Functions: computeLateFees, syncLedgerBatch. Stack: Kubernetes, Grafana, \
             PagerDuty, PostgreSQL, Redis.",
        ),
    ];
    let terms: Vec<&str> = pool.iter().map(String::as_str).collect();
    let text = transcribe_file(&real.join("en_sb_spk2_snt3.wav"), messages, &terms);
    let inserted: Vec<&&str> = terms.iter().filter(|t| contains_word(&text, t)).collect();
    assert!(inserted.is_empty(), "{inserted:?} in {text:?}");
}

/// "The sequel was much better" with SQL in the context: the sound is the same, the
/// meaning is not. Before the homophone check the prompted passes wrote the term into
/// these sentences ("The SQL was much better", "JSON sent the report"); sentences that do
/// say the terms must keep them. Counted over two espeak-ng voices with some slack: the
/// check can only take back what the plain decode heard as the ordinary word.
#[test]
fn a_word_that_spells_a_term_stays_a_word_unless_the_sentence_means_the_term() {
    let outcome = homophone_outcome(
        "We store the events in SQL tables, export JSON and run Spark jobs.",
        &["SQL", "JSON", "Spark"],
    );
    assert_eq!((outcome.words, outcome.terms), (6, 8), "{outcome:#?}");
    assert!(outcome.words_kept >= 4, "{outcome:#?}");
    assert!(outcome.terms_kept >= 6, "{outcome:#?}");
}

/// "They had to nix the plan" with Nix in the context: a capitalised term that is also
/// a word. Where the prompted passes wrote the term over what the plain decode misheard
/// ("mix"), the term is weighed against the word in lowercase, the context prompted.
#[test]
fn a_capitalised_term_that_is_also_a_word_is_written_only_where_the_sentence_means_it() {
    let outcome = homophone_outcome(
        "We build with Nix, serve the API with Flask and write the workers in Rust.",
        &["Nix", "Flask", "Rust"],
    );
    assert_eq!((outcome.words, outcome.terms), (6, 6), "{outcome:#?}");
    assert!(outcome.words_kept >= WORDS_KEPT_MIN, "{outcome:#?}");
    assert!(outcome.terms_kept >= TERMS_KEPT_MIN, "{outcome:#?}");
}

/// Of the 6 word clips (3 sentences, 2 voices), at least this many keep the word:
/// measured 6 (3 before the check weighed capitalised terms against their word).
const WORDS_KEPT_MIN: usize = 5;
/// Of the 6 terms said, at least this many are written: measured 4, before and after
/// (both voices' "written in Rust" comes out as "rust").
const TERMS_KEPT_MIN: usize = 4;

/// What the homophone clips of `context_terms` came out as.
#[derive(Debug, Default)]
struct HomophoneOutcome {
    /// Clips whose sentence has the ordinary word, and those transcribed without the term.
    words: usize,
    words_kept: usize,
    /// Terms said in the other clips, and those written.
    terms: usize,
    terms_kept: usize,
    report: Vec<String>,
}

/// Transcribes the homophone clips (tests/fixtures/make-homophones.sh) of
/// `context_terms`, with them as the dictionary and `message` as the context.
fn homophone_outcome(message: &str, context_terms: &[&str]) -> HomophoneOutcome {
    let messages = vec![Message::user(message)];
    let dictionary = Dictionary::from_terms(context_terms).expect("valid");
    let mut outcome = HomophoneOutcome::default();
    let clips = homophone_clips()
        .into_iter()
        .filter(|clip| context_terms.contains(&clip.term.as_str()));
    for clip in clips {
        let bytes = std::fs::read(&clip.path).expect("clip");
        let text = base_transcriber()
            .transcribe_blocking(
                bytes.into(),
                messages.clone(),
                Languages::Auto,
                dictionary.clone(),
            )
            .expect("transcribe")
            .text;
        outcome.report.push(format!("{} -> {text}", clip.sentence));
        if clip.says_terms {
            for term in context_terms {
                if contains_word(&clip.sentence, term) {
                    outcome.terms += 1;
                    outcome.terms_kept += usize::from(contains_word(&text, term));
                }
            }
        } else {
            outcome.words += 1;
            outcome.words_kept += usize::from(!contains_word(&text, &clip.term));
        }
    }
    outcome
}

/// The `sounds_like` of the clips of tests/fixtures/make-sounds-like.sh: how each name is
/// said there.
const SOUNDS_LIKE: &[(&str, &[&str])] = &[
    ("Nguyen", &["win", "nuh win"]),
    ("Cholmondeley", &["chumley"]),
    ("Ngozi", &["en go zee", "engozee"]),
    ("Xóchitl", &["so chee", "sochee"]),
];

/// Per clip of tests/fixtures/make-sounds-like.sh: whether its name (or, for a sentence of
/// ordinary words, the name its words sound like) is written, with the four names as
/// the dictionary, with or without their `sounds_like`.
fn sounds_like_outcome(with_sounds_like: bool) -> Vec<(HomophoneClip, String, bool)> {
    let terms: Vec<&str> = SOUNDS_LIKE.iter().map(|(term, _)| *term).collect();
    let mut dictionary = Dictionary::from_terms(&terms).expect("valid");
    if with_sounds_like {
        let given = SoundsLike::from_pairs(SOUNDS_LIKE.iter().copied()).expect("valid");
        dictionary = dictionary.with_sounds_like(given).expect("keys are terms");
    }
    sounds_like_clips()
        .into_iter()
        .map(|clip| {
            let bytes = std::fs::read(&clip.path).expect("clip");
            let text = base_transcriber()
                .transcribe_blocking(bytes.into(), vec![], Languages::Auto, dictionary.clone())
                .expect("transcribe")
                .text;
            let written = contains_word(&text, &clip.term);
            (clip, text, written)
        })
        .collect()
}

/// Names said unlike their spelling ("win" for Nguyen, "Chumley" for Cholmondeley) come out
/// as the dictionary spells them once `sounds_like` says how they sound; sentences whose
/// ordinary words are a name's spoken form ("win the game") keep their words.
#[test]
fn sounds_like_writes_names_said_unlike_their_spelling_and_nothing_else() {
    let report = |outcome: &[(HomophoneClip, String, bool)]| -> Vec<String> {
        outcome
            .iter()
            .map(|(clip, text, written)| format!("{} -> {text} ({written})", clip.sentence))
            .collect()
    };
    let with = sounds_like_outcome(true);
    let without = sounds_like_outcome(false);
    let names = |outcome: &[(HomophoneClip, String, bool)]| {
        outcome
            .iter()
            .filter(|(c, _, w)| c.says_terms && *w)
            .count()
    };
    let inserted = |outcome: &[(HomophoneClip, String, bool)]| {
        outcome
            .iter()
            .filter(|(c, _, w)| !c.says_terms && *w)
            .count()
    };
    let said = with.iter().filter(|(c, _, _)| c.says_terms).count();
    assert_eq!(said, 8, "{:#?}", report(&with));
    assert!(
        names(&with) >= SOUNDS_LIKE_NAMES_MIN,
        "{:#?}",
        report(&with)
    );
    assert!(
        names(&without) <= SPELLING_ONLY_NAMES_MAX,
        "{:#?}",
        report(&without)
    );
    assert_eq!(inserted(&with), 0, "{:#?}", report(&with));
    assert_eq!(inserted(&without), 0, "{:#?}", report(&without));
}

/// Of the 8 clips that say a name (4 names, 2 voices), at least this many write it with
/// `sounds_like`: measured 6. Not the espeak-ng British "doctor Win" (heard as
/// "Winterclaw"), nor the American "Sochee leads", which sounds as "So she leads" does:
/// the model reads the ordinary words there, as it does in the sentence that says them.
const SOUNDS_LIKE_NAMES_MIN: usize = 5;
/// ... and at most this many without: measured 1 (the British "Ngozi", from the
/// spelling's own forms).
const SPELLING_ONLY_NAMES_MAX: usize = 2;

/// A `sounds_like` that says a term sounds like function words ("for you", "what") names
/// nothing: no term is written over the ordinary speech that says them.
#[test]
fn a_spoken_form_of_function_words_inserts_nothing() {
    let dictionary = Dictionary::from_terms(["Nguyen", "Siobhan"])
        .and_then(|d| {
            d.with_sounds_like(SoundsLike::from_pairs([
                ("Nguyen", vec!["for you", "so"]),
                ("Siobhan", vec!["what", "can do"]),
            ])?)
        })
        .expect("valid");
    let jfk = std::fs::read(real_clip("en_whisper_jfk").path).expect("read");
    let text = base_transcriber()
        .transcribe_blocking(jfk.into(), vec![], Languages::Auto, dictionary)
        .expect("transcribe")
        .text;
    assert!(
        !text.contains("Nguyen") && !text.contains("Siobhan"),
        "{text}"
    );
}

#[test]
fn a_name_whisper_cannot_spell_comes_out_as_in_the_dictionary() {
    let text = transcribe_case("d05", vec![], &["Saoirse", "Tadhg", "Caoimhe"]);
    assert!(text.contains("Saoirse"), "{text}");
    assert!(text.contains("Tadhg"), "{text}");
    assert!(!text.contains("Caoimhe"), "{text}");
}

#[test]
fn canonical_tokenization_agrees_with_the_model_vocabulary() {
    let engine = base_engine(1, false);
    // Words with a token of their own come out as that one token, as whisper.cpp's own
    // tokenizer has them.
    for word in [" the", " Monday", " report", "Hello", " Americans"] {
        let canonical = engine.bpe_tokens(word).expect("spellable");
        assert_eq!(canonical.len(), 1, "{word}: {canonical:?}");
        assert_eq!(
            canonical,
            engine.tokenize(word).expect("tokenizes"),
            "{word}"
        );
    }
    // Rare terms split into several tokens; every term of the dev set is spellable.
    for term in [
        " Kubernetes",
        " user_service.py",
        " getUserById",
        " Saoirse",
        "Q3",
    ] {
        let canonical = engine.bpe_tokens(term).expect("spellable");
        assert!(
            !canonical.is_empty() && canonical.len() <= term.len(),
            "{term}"
        );
    }
    assert!(engine.bpe_tokens(" Saoirse").expect("spellable").len() > 1);
}

#[test]
fn decode_time_biasing_alone_spells_a_term_the_plain_decoder_misses() {
    let path = shared_dir().join("eval/context/audio/d19.wav");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let only_biasing = ContextLayers {
        biasing: true,
        ..ContextLayers::NONE
    };
    let transcribe = |layers: ContextLayers| {
        base_builder()
            .with_context_layers(layers)
            .build()
            .expect("model loads")
            .transcribe_blocking(
                bytes.clone().into(),
                vec![],
                Languages::Auto,
                Dictionary::from_terms(["Chroma", "Pinecone"]).expect("valid dictionary"),
            )
            .expect("transcribe")
            .text
    };
    let plain = transcribe(ContextLayers::NONE);
    let biased = transcribe(only_biasing);
    assert!(!plain.contains("Chroma"), "{plain}");
    assert!(biased.contains("Chroma"), "{biased}");
    assert!(!biased.contains("Pinecone"), "{biased}");
}

/// The base model's engine (greedy, no VAD) and jfk's samples at 16 kHz.
fn base_engine_and_jfk() -> (WhisperEngine, Vec<f32>) {
    let engine = base_engine(2, false);
    let clip = real_clip("en_whisper_jfk");
    let samples = samples_16k(&clip.path);
    (engine, samples)
}

/// whisper.cpp's batched beam search stops at the request's deadline (its abort
/// callback) with a typed error instead of a text. How soon is not asserted: a wall-clock
/// comparison fails by chance on a loaded machine (the search's own encoder pass runs
/// before the first check), and the stop's promptness is the abort callback's, checked
/// between decoding steps.
#[test]
fn a_beam_search_past_the_deadline_stops_with_a_typed_error() {
    let (engine, samples) = base_engine_and_jfk();
    let languages = Languages::Auto;
    let search = |deadline: Option<Instant>| {
        let stop = Stop {
            deadline,
            cancel: None,
        };
        let request = EngineRequest {
            stop: &stop,
            ..plain_request(&samples, &languages)
        };
        let mut searched = None;
        // What the engine makes of the window afterwards does not matter here.
        let mut judge = |window: &mut dyn WindowPasses| {
            if let Some(deadline) = deadline {
                std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
            }
            searched = Some(window.decode_prompted_beams("Americans, country.", 5));
            Ok(window.plain_text().to_owned())
        };
        let _ = engine
            .on_engine_threads(|| transcribe_judged(&mut engine.session(&request)?, &mut judge));
        searched
    };
    let whole = search(None).expect("the window reached its judge");
    assert!(
        whole
            .expect("no deadline")
            .contains("ask not what your country")
    );
    // Room for the plain decode; the judge then waits it out. On a machine so loaded that
    // the plain decode itself ran past the deadline, the window never reached its judge:
    // more room, a few times.
    let late = [8, 30, 120]
        .into_iter()
        .find_map(|secs| search(Some(Instant::now() + Duration::from_secs(secs))))
        .expect("the window reached its judge");
    let error = late.expect_err("past the deadline");
    assert_eq!(error.code(), "deadline_exceeded", "{error}");
}

/// The engine's per-window passes on jfk: more decodes and scores reuse the window's one
/// encoder pass; a beam-search decode is whisper.cpp's batched search, which encodes the
/// window once more, after which the scores still hold (and which an 11 s window does not
/// count as cheap); the spoken words score above a near miss; bad sequences are typed
/// errors.
#[test]
fn passes_of_a_window_share_its_encoding_and_score_the_spoken_words_higher() {
    let (engine, samples) = base_engine_and_jfk();
    let languages = Languages::Auto;
    let request = plain_request(&samples, &languages);
    let before = engine.encoder_passes();
    let mut passes_before_beams = 0;
    let mut beams_are_cheap = true;
    let mut seen = Vec::new();
    let mut judge = |window: &mut dyn WindowPasses| {
        let plain = window.plain_text().to_owned();
        beams_are_cheap = window.beams_are_cheap();
        let prompted = window.decode_prompted("Americans, country.", None)?;
        let again = window.decode_prompted("", None)?;
        let _ = window.score("", " And so my fellow", " Americans")?;
        passes_before_beams = engine.encoder_passes() - before;
        let beams = window.decode_prompted_beams("Americans, country.", 5)?;
        let sum = |scores: Option<Vec<f32>>| scores.expect("scorable").iter().sum::<f32>();
        let right = sum(window.score("", " And so my fellow", " Americans")?);
        let wrong = sum(window.score("", " And so my fellow", " Armenians")?);
        let empty = window.score_tokens(&[], &[], &[]).expect_err("empty");
        let outside = window
            .score_tokens(&[], &[], &[1_000_000])
            .expect_err("outside");
        seen.push((
            plain.clone(),
            prompted,
            again,
            beams,
            right,
            wrong,
            empty,
            outside,
        ));
        Ok(plain)
    };
    let output = engine
        .on_engine_threads(|| transcribe_judged(&mut engine.session(&request)?, &mut judge))
        .expect("transcribe");
    assert_eq!(passes_before_beams, 1, "one window, one encoder pass");
    assert!(
        !beams_are_cheap,
        "an 11 s window's search costs several greedy decodes"
    );
    assert_eq!(
        engine.encoder_passes() - before,
        2,
        "the batched beam search encodes once more"
    );
    assert_eq!(seen.len(), 1);
    let (plain, prompted, again, beams, right, wrong, empty, outside) = &seen[0];
    assert_eq!(&output.text, plain);
    assert!(prompted.contains("ask not what your country"), "{prompted}");
    assert!(beams.contains("ask not what your country"), "{beams}");
    assert!(again.contains("ask not what your country"), "{again}");
    assert!(
        *right > *wrong + 1.0,
        "Americans {right} vs Armenians {wrong}"
    );
    assert_eq!(empty.code(), "invalid_request");
    assert_eq!(outside.code(), "invalid_request");
}
