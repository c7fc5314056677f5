//! `ctxscribe`: transcribe files, fetch and list models, convert weights (see
//! [`ctxscribe::cli`] and `ctxscribe --help`).

fn main() {
    ctxscribe::config::exec_with_engine_environment();
    std::process::exit(ctxscribe::cli::main(std::env::args_os()));
}
