//! Upload limits, timeouts, a full queue, start-up and shutdown.

use super::*;

#[test]
fn upload_limits() {
    const LIMIT: usize = 1_000_000;
    let limit = LIMIT.to_string();
    let server = start(&["--max-file-bytes", &limit, "--max-audio-secs", "5"], &[]);
    let max_body = LIMIT + 4 * MIB;

    // A file part over the limit, found while streaming.
    let jfk_bytes = std::fs::metadata(jfk()).expect("jfk").len();
    assert!(jfk_bytes > LIMIT as u64);
    assert_error(
        &server.transcribe(&jfk_form()),
        413,
        "file_too_large",
        Some("file"),
    );
    // Under the limit: fine.
    assert_text(&server.transcribe(&Form::new().file(&short_clip())));
    // Small, but 11 s of audio with a 5 s limit.
    let reply = server.transcribe(&Form::new().file(&audio_fixture("ok_mp3_vbr_mono.mp3")));
    assert_error(&reply, 400, "audio_too_long", Some("file"));

    // A declared Content-Length over the limit: 413 at once, before any body byte.
    let head = |expect: bool| {
        format!(
            "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; \
             boundary={BOUNDARY}\r\nContent-Length: {}\r\n{}\r\n",
            max_body + 1,
            if expect {
                "Expect: 100-continue\r\n"
            } else {
                ""
            }
        )
    };
    let reply = exchange(server.addr, head(false).as_bytes(), b"");
    assert_error(&reply, 413, "request_too_large", None);
    assert!(reply.took < Duration::from_secs(3), "{:?}", reply.took);
    let reply = exchange(server.addr, head(true).as_bytes(), b"");
    assert_error(&reply, 413, "request_too_large", None);
    assert!(
        reply.interim.is_empty(),
        "asked for the body: {:?}",
        reply.interim
    );
    // A large body under the limit reaches the form (which then lacks a file).
    assert_error(
        &server.transcribe(&Form::new().text("padding", &"x".repeat(MIB))),
        400,
        "missing_file",
        Some("file"),
    );

    // A text field over the server's 2 MiB field cap, and one under it but over the
    // library's 1 MiB dictionary limit.
    let reply = server.transcribe(&Form::new().text("dictionary", &"a,".repeat(MIB + 1)));
    assert_error(&reply, 413, "request_too_large", Some("dictionary"));
    let big = "term,".repeat(MIB * 3 / 2 / 5);
    let reply = server.transcribe(&Form::new().file(&short_clip()).text("dictionary", &big));
    assert_error(&reply, 400, "invalid_request", Some("dictionary"));

    // A chunked body (no Content-Length) over the whole-body limit: 413 while streaming.
    let mut form = Form::new();
    for i in 0..6 {
        form = form.text(&format!("extra{i}"), &"y".repeat(MIB));
    }
    let (content_type, body) = form.encode();
    assert!(body.len() > max_body);
    let mut chunked = Vec::new();
    for piece in body.chunks(64 * 1024) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    let reply = exchange(server.addr, head.as_bytes(), &chunked);
    assert_error(&reply, 413, "request_too_large", None);
}

#[test]
fn default_upload_limit_is_25_mib() {
    let server = start(&[], &[]);
    // A wav of 25 MiB + 1 byte (header included).
    let size = 25 * MIB + 1;
    let mut wav = wav_header(size - 44);
    wav.resize(size, 0);
    let reply = server.transcribe(&Form::new().file_bytes("big.wav", "audio/wav", wav));
    assert_error(&reply, 413, "file_too_large", Some("file"));
    let head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; \
         boundary=b\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        29 * MIB + 1
    );
    assert_error(
        &exchange(server.addr, head.as_bytes(), b""),
        413,
        "request_too_large",
        None,
    );
}

#[test]
fn slow_uploads_and_slow_transcriptions_time_out() {
    // The base model on one thread needs well over half a second for jfk.
    let base = model("ggml-base.bin");
    let server = start(
        &[
            "--model",
            base.to_str().expect("utf-8 path"),
            "--request-timeout",
            "0.5",
        ],
        &[],
    );
    // An upload that stalls: 408.
    let head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; \
         boundary={BOUNDARY}\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n--{BOUNDARY}\r\n"
    );
    let reply = exchange(server.addr, head.as_bytes(), b"");
    assert_error(&reply, 408, "request_timeout", None);
    assert!(reply.took < Duration::from_secs(5), "{:?}", reply.took);

    // A transcription past the deadline: 502 at the deadline, and the engine stops.
    let reply = server.transcribe(&jfk_form());
    assert_error(&reply, 502, "transcription_failed", None);
    assert!(reply.took < Duration::from_secs(5), "{:?}", reply.took);
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.health()["in_flight"] != 0 {
        assert!(Instant::now() < deadline, "the engine did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_full_server_answers_503_with_retry_after() {
    let server = Arc::new(start(&["--max-concurrent", "1", "--max-queue", "1"], &[]));
    let form = Arc::new(jfk_form());
    let replies = {
        let server = Arc::clone(&server);
        in_parallel(8, move |_| server.transcribe(&form))
    };
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let busy: Vec<&Reply> = replies.iter().filter(|r| r.status == 503).collect();
    assert_eq!(
        ok + busy.len(),
        8,
        "only 200 or 503: {:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(ok >= 1 && !busy.is_empty(), "{ok} ok, {} busy", busy.len());
    let mut fastest_ok = Duration::MAX;
    for reply in &replies {
        if reply.status == 200 {
            assert!(wer(JFK, &assert_text(reply)) <= 0.1);
            fastest_ok = fastest_ok.min(reply.took);
        }
    }
    for reply in busy {
        assert_error(reply, 503, "server_busy", None);
        let retry: u64 = reply
            .header("retry-after")
            .and_then(|v| v.parse().ok())
            .expect("a Retry-After in seconds");
        assert!((1..=60).contains(&retry), "{retry}");
        // Refused at once, not after waiting for the engine.
        assert!(
            reply.took < fastest_ok,
            "{:?} >= {fastest_ok:?}",
            reply.took
        );
    }
    // Free again afterwards.
    assert_text(&server.transcribe(&Form::new().file(&short_clip())));
    let health = server.health();
    assert_eq!(
        (health["in_flight"].clone(), health["waiting"].clone()),
        (json!(0), json!(0))
    );
}

#[test]
fn queued_requests_wait_their_turn() {
    let server = Arc::new(start(&["--max-concurrent", "1", "--max-queue", "8"], &[]));
    let form = Arc::new(Form::new().file(&short_clip()));
    let replies = {
        let server = Arc::clone(&server);
        in_parallel(4, move |_| server.transcribe(&form))
    };
    for reply in &replies {
        assert!(!assert_text(reply).is_empty());
    }
}

#[test]
fn a_missing_model_stops_the_server_at_startup() {
    let Err((status, logs)) = launch(&["--model", "/nonexistent/ggml-model.bin"], &[]) else {
        panic!("the server started without its model");
    };
    assert!(status.is_some_and(|s| s.code() == Some(1)), "{status:?}");
    let logs = logs.join("\n");
    assert!(
        logs.contains("model") && logs.contains("make setup"),
        "{logs}"
    );

    let Err((status, logs)) = launch(&["--port", "not-a-port"], &[]) else {
        panic!("the server started with a bad port");
    };
    assert!(status.is_some_and(|s| s.code() == Some(2)), "{status:?}");
    assert!(logs.join("\n").contains("--port"), "{logs:?}");
}

#[test]
fn sigterm_finishes_the_requests_in_flight() {
    let mut server = start(&[], &[]);
    let addr = server.addr;
    let (content_type, body) = jfk_form().encode();
    let in_flight = std::thread::spawn(move || {
        let head = format!(
            "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        exchange(addr, head.as_bytes(), &body)
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.health()["in_flight"] != 1 {
        assert!(Instant::now() < deadline, "the request never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());

    let reply = in_flight.join().expect("request thread");
    assert!(wer(JFK, &assert_text(&reply)) <= 0.1);
    let exit = server.wait_exit(Duration::from_secs(30));
    assert!(exit.success(), "{exit}");
    assert!(
        TcpStream::connect(addr).is_err(),
        "still accepting after shutdown"
    );
    let logs = server.logs().join("\n");
    assert!(logs.contains("shutting down"), "{logs}");
    assert!(logs.contains("all requests finished"), "{logs}");
}
