//! `ctxscribe-server`: the reference HTTP server as a binary (the same as the `server`
//! example), so that integration tests find it built (`CARGO_BIN_EXE_ctxscribe-server`).

fn main() -> std::process::ExitCode {
    ctxscribe::server::main()
}
