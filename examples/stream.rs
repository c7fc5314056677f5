//! README's Rust streaming example, exactly as README.md shows it below this comment:
//! python/tests/test_docs.py checks that the two are the same and runs this program on a
//! `note.webm` in an empty HOME.

use std::io::Write;

use ctxscribe::{CancelToken, ContextTranscriber, Dictionary, Event, Languages, RunOptions};

fn main() -> ctxscribe::Result<()> {
    ctxscribe::config::exec_with_engine_environment();
    let transcriber = ContextTranscriber::builder().build()?;
    let audio = std::fs::read("note.webm").expect("readable file");
    let request =
        transcriber.request(audio.into(), vec![], Languages::Auto, Dictionary::default())?;
    // cancel.cancel() from any thread stops the run: the stream ends with Error::Cancelled.
    let cancel = CancelToken::new();
    let options = RunOptions::new().with_cancel(cancel.clone());
    for event in transcriber.stream(request, options) {
        match event? {
            Event::Delta(text) => {
                print!("{text}");
                std::io::stdout().flush().ok();
            }
            Event::Progress {
                done_secs,
                total_secs,
            } => eprintln!("[{done_secs:.0}/{total_secs:.0} s]"),
            Event::Done(transcript) => println!("\n({:.1} s of audio)", transcript.audio_secs),
            _ => {}
        }
    }
    Ok(())
}
