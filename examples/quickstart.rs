//! README's Rust quickstart, exactly as README.md shows it below this comment:
//! python/tests/test_docs.py checks that the two are the same and runs this program on a
//! `note.webm` in an empty HOME.

use ctxscribe::{ContextTranscriber, Dictionary, Languages, Message};

fn main() -> ctxscribe::Result<()> {
    // First: the engine's threads poll briefly, then sleep, so that another busy process
    // cannot stall them (starts the program again with GOMP_SPINCOUNT=1000 if unset).
    ctxscribe::config::exec_with_engine_environment();
    // Loads the model once; clone the transcriber freely, share it across threads.
    let transcriber = ContextTranscriber::builder().build()?;
    let audio = std::fs::read("note.webm").expect("readable file");
    let transcript = transcriber.transcribe_blocking(
        audio.into(),
        vec![Message::user(
            "Editing user_service.py; functions: getUserById.",
        )],
        Languages::from_codes(["en", "de"])?,
        Dictionary::from_terms(["kubectl", "user_service.py"])?,
    )?;
    println!("{} ({:?})", transcript.text, transcript.language);
    Ok(())
}
