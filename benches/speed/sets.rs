//! The clip sets: the real clips as they are, joined into longer ones, and the context
//! sets with their messages and dictionaries.

use std::path::Path;

use ctxscribe::audio::{AudioLimits, decode_to_16k_mono};
use ctxscribe::{Dictionary, Languages};

use super::{Clip, GAP_SECS, RATE, Set};

/// Every clip of ../shared/eval/real with its reference and language, in manifest
/// order, both engines detecting the language.
pub(crate) fn load_real_clips() -> Result<Vec<Clip>, String> {
    let mut clips = Vec::new();
    for real in ctxscribe_test_support::real_clips()? {
        let bytes = std::fs::read(&real.path).map_err(|e| format!("{}: {e}", real.id))?;
        let pcm = decode_to_16k_mono(&bytes, &AudioLimits::default())
            .map_err(|e| format!("{}: {e}", real.id))?;
        let mut clip = plain_clip(real.id, pcm.samples, real.reference);
        clip.reference_language = real.language;
        clips.push(clip);
    }
    Ok(clips)
}

pub(crate) fn plain_clip(id: String, samples: Vec<f32>, reference: String) -> Clip {
    Clip {
        id,
        samples,
        reference,
        messages: Vec::new(),
        dictionary: Dictionary::default(),
        languages: Languages::Auto,
        fw_language: None,
        reference_language: "en".into(),
    }
}

/// Joins clips `order` (indices into `english`) with short silences.
pub(crate) fn join(english: &[(String, Vec<f32>, String)], order: &[usize]) -> (Vec<f32>, String) {
    let gap = (GAP_SECS * RATE) as usize;
    let mut samples = Vec::new();
    let mut references = Vec::new();
    for (n, &index) in order.iter().enumerate() {
        if n > 0 {
            samples.resize(samples.len() + gap, 0.0);
        }
        samples.extend_from_slice(&english[index].1);
        references.push(english[index].2.as_str());
    }
    (samples, references.join(" "))
}

/// Up to `count` clips of about `target` seconds: consecutive English clips joined until
/// the length reaches 90 % of the target, kept when it stays under 130 %. The next clip
/// starts after the last one used (or after the first one tried, when it was too long),
/// so no two clips share audio.
pub(crate) fn joined_set(
    name: &str,
    english: &[(String, Vec<f32>, String)],
    target: f64,
    count: usize,
    runs: usize,
) -> Set {
    let mut clips = Vec::new();
    let mut start = 0;
    while clips.len() < count && start < english.len() {
        let mut order = Vec::new();
        let mut secs = 0.0;
        let mut index = start;
        while secs < 0.9 * target && index < english.len() {
            order.push(index);
            secs += english[index].1.len() as f64 / RATE + GAP_SECS;
            index += 1;
        }
        let length = secs - GAP_SECS;
        if length >= 0.9 * target - GAP_SECS && length <= 1.3 * target {
            let (samples, reference) = join(english, &order);
            clips.push(plain_clip(format!("{name}_{start}"), samples, reference));
            start = index;
        } else {
            start += 1;
        }
    }
    Set {
        name: name.into(),
        clips,
        runs,
        cases: None,
    }
}

/// The clip `id` of `english` alone, as a set of its own (the figure whisper.cpp's and
/// faster-whisper's own benchmarks quote is jfk's).
pub(crate) fn single_set(
    name: &str,
    english: &[(String, Vec<f32>, String)],
    id: &str,
    runs: usize,
) -> Result<Set, String> {
    let (_, samples, reference) = english
        .iter()
        .find(|(clip, _, _)| clip == id)
        .ok_or(format!("no clip {id} in the eval manifest"))?;
    Ok(Set {
        name: name.into(),
        clips: vec![plain_clip(name.into(), samples.clone(), reference.clone())],
        runs,
        cases: None,
    })
}

/// One file of at least `target` seconds: the English clips joined, cycled as needed.
pub(crate) fn long_set(
    name: &str,
    english: &[(String, Vec<f32>, String)],
    target: f64,
    runs: usize,
) -> Set {
    let mut order = Vec::new();
    let mut secs = 0.0;
    let mut index = 0;
    while secs < target {
        order.push(index % english.len());
        secs += english[index % english.len()].1.len() as f64 / RATE + GAP_SECS;
        index += 1;
    }
    let (samples, reference) = join(english, &order);
    Set {
        name: name.into(),
        clips: vec![plain_clip(name.into(), samples, reference)],
        runs,
        cases: None,
    }
}

/// The context dev set: each case with its messages, dictionary and languages
/// ([`ctxscribe_test_support::read_context_cases`]).
pub(crate) fn context_set(dir: &Path, name: &str, runs: usize) -> Result<Set, String> {
    let cases_path = dir.join("cases.jsonl");
    let mut clips = Vec::new();
    for case in ctxscribe_test_support::read_context_cases(&cases_path)? {
        let bytes = std::fs::read(case.audio_path(dir)).map_err(|e| format!("{}: {e}", case.id))?;
        let pcm = decode_to_16k_mono(&bytes, &AudioLimits::default())
            .map_err(|e| format!("{}: {e}", case.id))?;
        clips.push(Clip {
            fw_language: case.single_language(),
            id: case.id,
            samples: pcm.samples,
            reference: case.reference,
            messages: case.messages,
            dictionary: case.dictionary,
            languages: case.languages,
            reference_language: String::new(),
        });
    }
    Ok(Set {
        name: name.into(),
        clips,
        runs,
        cases: Some(cases_path),
    })
}
