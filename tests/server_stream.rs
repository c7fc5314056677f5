//! `stream=true` at the engine's grain, on a live `ctxscribe-server` with real speech: a
//! request without context gets each timed segment of a window as its first decode
//! closes it; a request with context gets each window once its corrections are done. In
//! both the `transcript.text.done` text is the non-streamed transcript.
//!
//! Needs `ffmpeg` (to join real clips of ../shared/eval/real into longer files).

mod common;

use std::time::{Duration, Instant};

use common::server::start;
use common::sse::{joined_clip, plain_text, stream_timed};
use serde_json::{Value, json};

/// The deltas of `timed` (all events but the last) and the done event's arrival.
fn split(timed: &[(Duration, Value)]) -> (Vec<(Duration, String)>, Duration, &Value) {
    let ((done_at, done), deltas) = timed.split_last().expect("events");
    let deltas = deltas
        .iter()
        .map(|(at, event)| {
            assert_eq!(event["type"], "transcript.text.delta", "{timed:?}");
            (*at, event["delta"].as_str().expect("a delta").to_owned())
        })
        .collect();
    (deltas, *done_at, done)
}

fn ms(at: Duration) -> f64 {
    at.as_secs_f64() * 1e3
}

/// Without context, a window's segments arrive one by one: the 16 s clip (one window)
/// gets more than one delta, and so does every window of the 39 s one; joined they are
/// the done event's text, which is the non-streamed text. Prints the time to the first
/// delta, to the done event, and of the non-streamed answer (measurements, not asserted).
#[test]
fn plain_requests_stream_each_segment_and_join_to_the_done_text() {
    let server = start(&[], &[]);
    let cases = [
        // One window of speech (under 28 s).
        (
            "joined-16s",
            vec!["en_whisper_jfk", "en_fw_stereo_right"],
            2,
        ),
        (
            "joined-39s",
            vec![
                "en_whisper_jfk",
                "en_picovoice_quilter",
                "en_ls_file_1221-135766-0001",
                "en_fw_stereo_left",
            ],
            3,
        ),
    ];
    for (name, clips, min_deltas) in cases {
        let file = joined_clip(name, &clips);
        let asked = Instant::now();
        let plain = plain_text(&server, &file, &[]);
        let whole = asked.elapsed();
        let timed = stream_timed(&server, &file, &[]);
        let (deltas, done_at, done) = split(&timed);
        assert_eq!(
            *done,
            json!({"type": "transcript.text.done", "text": plain})
        );
        let joined: String = deltas.iter().map(|(_, d)| d.as_str()).collect();
        assert_eq!(joined, plain, "{name}: {timed:?}");
        assert!(deltas.len() >= min_deltas, "{name}: {timed:?}");
        let first = deltas.first().map_or(done_at, |(at, _)| *at);
        eprintln!(
            "stream {name} (no context): {} deltas, first delta after {:.0} ms, done after \
             {:.0} ms; the non-streamed answer took {:.0} ms",
            deltas.len(),
            ms(first),
            ms(done_at),
            ms(whole)
        );
        for (at, delta) in &deltas {
            eprintln!("  {:>6.0} ms {delta:?}", ms(*at));
        }
    }
}

/// With context (a dictionary), a window's corrections need the whole window: the one
/// window of the 16 s clip is one delta, and it is the done event's text.
#[test]
fn requests_with_context_stream_each_corrected_window() {
    let server = start(&[], &[]);
    let file = joined_clip("joined-16s", &["en_whisper_jfk", "en_fw_stereo_right"]);
    let fields = [("dictionary", "Americans, country")];
    let plain = plain_text(&server, &file, &fields);
    let timed = stream_timed(&server, &file, &fields);
    let (deltas, done_at, done) = split(&timed);
    assert_eq!(
        *done,
        json!({"type": "transcript.text.done", "text": plain})
    );
    assert_eq!(
        deltas.iter().map(|(_, d)| d.as_str()).collect::<Vec<_>>(),
        [plain.as_str()],
        "{timed:?}"
    );
    eprintln!(
        "stream joined-16s (dictionary): delta after {:.0} ms, done after {:.0} ms",
        ms(deltas[0].0),
        ms(done_at)
    );
}
