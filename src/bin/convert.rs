//! `ctxscribe-convert`: converts a CTranslate2 ("faster-whisper") Whisper model directory
//! into a whisper.cpp ggml file; the same as `ctxscribe convert` (see
//! [`ctxscribe::cli::convert_main`] and `ctxscribe-convert --help`).
//!
//! ```text
//! ctxscribe-convert CT2_DIR OUT_FILE [--type f16|q8_0|q5_1]
//! ```
//! The output is written to a temporary file beside `OUT_FILE` and renamed into place.

fn main() {
    std::process::exit(ctxscribe::cli::convert_main(std::env::args_os()));
}
