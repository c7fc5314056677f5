//! The pipeline's run options on real audio: events as windows finish, a cancel token
//! from another thread, a time limit, an event sink that panics, a stream left early.

mod common;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::apps::JFK;
use common::{assert_segments_cover, model, norm_words, real_clip, samples_16k, wer};
use ctxscribe::{
    Audio, CancelToken, ContextTranscriber, Dictionary, Error, Event, Languages, RunOptions,
    TranscriptionRequest,
};

fn tiny() -> &'static ContextTranscriber {
    static TINY: OnceLock<ContextTranscriber> = OnceLock::new();
    TINY.get_or_init(|| {
        ContextTranscriber::builder()
            .with_model_path(model("ggml-tiny.en.bin"))
            .with_threads(2)
            .build()
            .expect("tiny.en loads")
    })
}

fn jfk_samples() -> Vec<f32> {
    samples_16k(&real_clip("en_whisper_jfk").path)
}

/// jfk said `copies` times in a row: about 11 s each.
fn request(copies: usize) -> TranscriptionRequest {
    let one = jfk_samples();
    let samples: Vec<f32> = one
        .iter()
        .copied()
        .cycle()
        .take(one.len() * copies)
        .collect();
    let audio = Audio::Pcm {
        samples,
        sample_rate: 16_000,
    };
    tiny()
        .request(audio, vec![], Languages::Auto, Dictionary::default())
        .expect("a valid request")
}

#[test]
fn a_run_reports_its_windows_as_they_finish_and_ends_with_the_transcript() {
    let mut events = Vec::new();
    let mut sink = |event: &Event| events.push(event.clone());
    let transcript = tiny()
        .run(request(3), RunOptions::new().on_event(&mut sink))
        .expect("transcribes");
    let three = [JFK, JFK, JFK].join(" ");
    assert!(wer(&three, &transcript.text) < 0.1, "{}", transcript.text);
    assert_segments_cover(&transcript);
    let Some(Event::Done(done)) = events.last() else {
        panic!("the last event is the transcript: {events:?}");
    };
    assert_eq!(**done, transcript);
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Delta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // Joined, the deltas are the text unless a window decoded again (here: the
    // windows after the first, conditioned on the text before them) did not extend
    // what was sent of it; every delta was sent, and the first one starts the text.
    assert!(!deltas.is_empty() && transcript.text.starts_with("And so my fellow"));
    let segments: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Segment(segment) => Some(segment.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(segments.join(" "), transcript.text);
    let progress: Vec<f64> = events
        .iter()
        .filter_map(|e| match e {
            Event::Progress { done_secs, .. } => Some(*done_secs),
            _ => None,
        })
        .collect();
    assert!(progress.len() >= 2, "{progress:?}");
    assert!(progress.windows(2).all(|w| w[0] <= w[1]), "{progress:?}");
    assert!((progress[progress.len() - 1] - transcript.audio_secs).abs() < 0.5);

    // One window: the deltas are exactly the text.
    let mut deltas = String::new();
    let mut sink = |event: &Event| {
        if let Event::Delta(text) = event {
            deltas.push_str(text);
        }
    };
    let one = tiny()
        .run(request(1), RunOptions::new().on_event(&mut sink))
        .expect("transcribes");
    assert_eq!(deltas, one.text);

    // The same through the iterator, on a thread of its own.
    let streamed: Vec<Event> = tiny()
        .stream(request(3), RunOptions::new())
        .collect::<Result<_, _>>()
        .expect("streams");
    let (Some(Event::Done(streamed_done)), Some(Event::Done(done))) =
        (streamed.last(), events.last())
    else {
        panic!("both end with the transcript");
    };
    assert_eq!(streamed[..streamed.len() - 1], events[..events.len() - 1]);
    assert_eq!(
        (&streamed_done.text, &streamed_done.segments),
        (&done.text, &done.segments)
    );
}

#[test]
fn a_cancel_token_stops_a_run_from_another_thread_and_may_be_cancelled_any_time() {
    let started = Instant::now();
    tiny()
        .run(request(6), RunOptions::new())
        .expect("transcribes");
    let whole = started.elapsed();

    // Cancelled once the run works on the engine (its first event): a run still waiting
    // for an engine thread (other tests share the transcriber) stops when it gets one.
    let token = CancelToken::new();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            let _ = started_rx.recv();
            std::thread::sleep(whole / 10);
            token.cancel();
            Instant::now()
        })
    };
    let mut first = Some(started_tx);
    let mut on_event = |_: &Event| {
        if let Some(started) = first.take() {
            let _ = started.send(());
        }
    };
    let options = RunOptions::new()
        .with_cancel(token.clone())
        .on_event(&mut on_event);
    let error = tiny().run(request(6), options).expect_err("cancelled");
    let cancelled_at = canceller.join().expect("canceller");
    assert!(matches!(error, Error::Cancelled), "{error}");
    assert_eq!(error.code(), "cancelled");
    assert_eq!(error.code().http_code(), "transcription_failed");
    let late = cancelled_at.elapsed();
    println!("stopped {late:?} after the cancel; a whole run takes {whole:?}");
    assert!(late < whole / 4, "stopped {late:?} after the cancel");

    // Cancelled before the call, twice: no work at all; a stream says so too.
    token.cancel();
    let error = tiny()
        .run(request(1), RunOptions::new().with_cancel(token.clone()))
        .expect_err("cancelled before");
    assert!(matches!(error, Error::Cancelled));
    let mut stream = tiny().stream(request(1), RunOptions::new().with_cancel(token));
    assert!(matches!(stream.next(), Some(Err(Error::Cancelled))));
    assert!(stream.next().is_none());

    // Cancelled after the call ended: nothing happens.
    let fresh = CancelToken::new();
    let transcript = tiny()
        .run(request(1), RunOptions::new().with_cancel(fresh.clone()))
        .expect("transcribes");
    fresh.cancel();
    assert_eq!(norm_words(&transcript.text), norm_words(JFK));
}

#[test]
fn a_time_limit_gives_deadline_exceeded() {
    let error = tiny()
        .run(
            request(6),
            RunOptions::new().with_timeout(Duration::from_millis(300)),
        )
        .expect_err("past its time limit");
    assert!(matches!(error, Error::DeadlineExceeded), "{error}");
    assert_eq!(error.code(), "deadline_exceeded");
}

#[test]
fn an_event_sink_that_panics_fails_the_run_and_the_transcriber_goes_on() {
    let mut sink = |event: &Event| {
        if matches!(event, Event::Delta(_)) {
            panic!("the caller's sink fails");
        }
    };
    let error = tiny()
        .run(request(1), RunOptions::new().on_event(&mut sink))
        .expect_err("the sink panicked");
    assert_eq!(error.code(), "transcription_failed", "{error}");
    let transcript = tiny()
        .run(request(1), RunOptions::new())
        .expect("transcribes");
    assert_eq!(norm_words(&transcript.text), norm_words(JFK));
}

#[test]
fn a_stream_left_early_stops_its_run_but_not_the_callers_token() {
    let token = CancelToken::new();
    let mut stream = tiny().stream(request(6), RunOptions::new().with_cancel(token.clone()));
    let first = stream.next().expect("an event").expect("no error");
    assert!(matches!(first, Event::Delta(_)), "{first:?}");
    let dropped = Instant::now();
    drop(stream);
    assert!(!token.is_cancelled());
    // The engine is free again at once: the next run does not wait for the dropped one.
    let transcript = tiny()
        .run(request(1), RunOptions::new().with_cancel(token))
        .expect("transcribes");
    assert_eq!(norm_words(&transcript.text), norm_words(JFK));
    println!("the next run ended {:?} after the drop", dropped.elapsed());
}
