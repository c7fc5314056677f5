//! The reference HTTP server: OpenAI's `POST /v1/audio/transcriptions`, plus context.
//!
//! ```sh
//! make serve                                   # 127.0.0.1:8080, the default model
//! cargo run --release --features server --example server -- --port 9000 --threads 4
//! ```
//!
//! The server is the library's `server` module (feature `server`): its documentation
//! lists the endpoints, fields, errors, limits and logs; `--help` lists the options.

fn main() -> std::process::ExitCode {
    ctxscribe::server::main()
}
