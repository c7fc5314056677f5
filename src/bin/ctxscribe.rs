//! `ctxscribe`: transcribe files, fetch and list models, convert weights (see
//! [`ctxscribe::cli`] and `ctxscribe --help`).

fn main() {
    std::process::exit(ctxscribe::cli::main(std::env::args_os()));
}
