//! The official OpenAI Python SDK, and HTTP latency against the library (a benchmark).

use super::*;

#[test]
fn openai_python_sdk() {
    let python = test_venv_python();
    let server = start(&[], &[("CTXSCRIBE_API_KEYS", "sk-sdk-test-key")]);
    let output = Command::new(&python)
        .arg(repo_root().join("tests/openai_sdk_client.py"))
        .arg(format!("http://{}/v1", server.addr))
        .arg("sk-sdk-test-key")
        .arg(jfk())
        .output()
        .expect("run tests/openai_sdk_client.py");
    assert!(
        output.status.success(),
        "the SDK client failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Value = serde_json::from_slice(&output.stdout).expect("JSON from the client");

    for case in ["dictionary", "context", "tuple_file", "sounds_like"] {
        let text = results[case]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{case}: {results}"));
        assert!(wer(JFK, text) <= 0.1, "{case}: {text}");
    }
    let errors = [
        (
            "text_format",
            400,
            "unsupported_response_format",
            json!("response_format"),
        ),
        ("bad_languages", 400, "invalid_request", json!("languages")),
        (
            "bad_sounds_like",
            400,
            "invalid_request",
            json!("sounds_like"),
        ),
        ("bad_key", 401, "invalid_api_key", Value::Null),
        ("no_file_type", 400, "unsupported_audio_type", json!("file")),
    ];
    for (case, status, code, param) in errors {
        let error = &results[case];
        assert_eq!(error["status"], status, "{case}: {error}");
        assert_eq!(error["code"], code, "{case}: {error}");
        assert_eq!(error["param"], param, "{case}: {error}");
        assert_eq!(
            error["keys"],
            json!(["code", "message", "param", "type"]),
            "{case}: {error}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Latency (a benchmark, not a test)
// ---------------------------------------------------------------------------------------

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A stage's duration from the reply's `Server-Timing` header.
fn server_timing(reply: &Reply, stage: &str) -> Duration {
    let header = reply.header("server-timing").expect("Server-Timing");
    let ms: f64 = header
        .split(',')
        .find_map(|part| part.trim().strip_prefix(&format!("{stage};dur=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {stage} in {header}"));
    Duration::from_secs_f64(ms / 1e3)
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// p50 latency of jfk.wav over HTTP (a fresh connection, upload, queue, decode, engine,
/// answer) against a direct `transcribe_blocking` call on the same bytes, same model and
/// threads. Runs alternate between the two, after one warm-up each, so that load from
/// elsewhere on the machine hits both alike. `CTXSCRIBE_BENCH_RUNS` (default 7) and
/// `CTXSCRIBE_BENCH_THREADS` (default: all cores) change the setup.
#[test]
#[ignore = "benchmark: cargo test --release --features server --test server -- --ignored --nocapture"]
fn latency_http_vs_library() {
    let runs = env_number("CTXSCRIBE_BENCH_RUNS", 7);
    let threads = env_number(
        "CTXSCRIBE_BENCH_THREADS",
        std::thread::available_parallelism().map_or(1, usize::from),
    );
    let base = model("ggml-base.bin");
    let bytes = std::fs::read(jfk()).expect("read jfk");
    let transcriber = ctxscribe::ContextTranscriber::builder()
        .with_model_path(&base)
        .with_threads(threads)
        .build()
        .expect("load base");
    let server = start(
        &[
            "--model",
            base.to_str().expect("utf-8 path"),
            "--threads",
            &threads.to_string(),
        ],
        &[],
    );
    let form = jfk_form();

    let (mut library, mut http) = (Vec::new(), Vec::new());
    // Wall time minus the decode and engine stages: what the call itself costs.
    let (mut library_extra, mut http_extra) = (Vec::new(), Vec::new());
    for run in 0..=runs {
        let started = Instant::now();
        let transcript = transcriber
            .transcribe_blocking(
                bytes.clone().into(),
                vec![],
                ctxscribe::Languages::Auto,
                ctxscribe::Dictionary::default(),
            )
            .expect("transcribe");
        let library_took = started.elapsed();
        assert!(wer(JFK, &transcript.text) <= 0.1, "{}", transcript.text);

        let reply = server.transcribe(&form);
        assert!(wer(JFK, &assert_text(&reply)) <= 0.1);
        let stages = server_timing(&reply, "decode") + server_timing(&reply, "engine");
        if run > 0 {
            library.push(library_took);
            library_extra
                .push(library_took - transcript.timings.decode - transcript.timings.engine);
            http.push(reply.took);
            http_extra.push(reply.took.saturating_sub(stages));
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "library ms: {:?}",
        library.iter().map(|d| ms(*d).round()).collect::<Vec<_>>()
    );
    println!(
        "http ms:    {:?}",
        http.iter().map(|d| ms(*d).round()).collect::<Vec<_>>()
    );
    println!(
        "outside decode + engine, p50: library {:.2} ms, HTTP {:.2} ms",
        ms(p50(library_extra)),
        ms(p50(http_extra))
    );
    let (library, http) = (p50(library), p50(http));
    println!(
        "jfk.wav (11 s), ggml-base, {threads} threads, {runs} runs each after a warm-up: \
         p50 library {:.0} ms, p50 HTTP {:.0} ms, difference {:+.1} ms",
        ms(library),
        ms(http),
        ms(http) - ms(library)
    );
}
