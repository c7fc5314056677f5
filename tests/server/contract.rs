//! The contract: every supported type, its errors, its fields, its logs.

use super::*;

#[test]
fn every_supported_type_is_transcribed() {
    let server = start(&[], &[]);
    let text = assert_text(&server.transcribe(&jfk_form().text("model", "whisper-1")));
    assert!(wer(JFK, &text) <= 0.1, "{text}");

    for name in [
        "ok_webm_opus.webm",
        "ok_mp3_cbr_128k.mp3",
        "ok_m4a_aac.m4a",
        "ok_ogg_opus.ogg",
    ] {
        let reply = server.transcribe(&Form::new().file(&audio_fixture(name)));
        let text = assert_text(&reply);
        assert!(wer(JFK, &text) <= 0.2, "{name}: {text}");
    }

    // The bytes decide, never the part's file name or content type.
    let wav = std::fs::read(short_clip()).expect("read clip");
    let reply = server.transcribe(&Form::new().file_bytes("speech.flac", "text/plain", wav));
    assert!(!assert_text(&reply).is_empty());
    let flac = std::fs::read(audio_fixture("unsupported_flac.flac")).expect("read flac");
    let reply = server.transcribe(&Form::new().file_bytes("speech.wav", "audio/wav", flac));
    assert_error(&reply, 400, "unsupported_audio_type", Some("file"));
}

#[test]
fn contract_errors() {
    let server = start(&[], &[]);
    let wav = std::fs::read(short_clip()).expect("read clip");
    check_non_multipart_bodies_are_refused(&server);
    check_missing_file_and_unsupported_audio(&server);
    check_invalid_response_format_and_context_fields(&server, &wav);
    check_routing(&server);
    check_health_without_keys(&server);
}

/// Not multipart/form-data (415), or multipart/form-data that is unusable (400).
fn check_non_multipart_bodies_are_refused(server: &Server) {
    // Not multipart/form-data: 415, whatever the body.
    for content_type in [
        "application/json",
        "application/x-www-form-urlencoded",
        "text/plain",
        "multipart/mixed; boundary=x",
        "not a mime type",
    ] {
        let reply = server.send(
            "POST",
            TRANSCRIPTIONS,
            &[],
            Some((content_type, br#"{"file": "x"}"#)),
        );
        assert_error(&reply, 415, "unsupported_media_type", None);
    }
    let reply = server.send("POST", TRANSCRIPTIONS, &[], None);
    assert_error(&reply, 415, "unsupported_media_type", None);

    // multipart/form-data, but unusable.
    let reply = server.send(
        "POST",
        TRANSCRIPTIONS,
        &[],
        Some(("multipart/form-data", b"--x\r\n")),
    );
    assert_error(&reply, 400, "invalid_multipart", None);
    let reply = server.send(
        "POST",
        TRANSCRIPTIONS,
        &[],
        Some((
            "multipart/form-data; boundary=zzz",
            b"this is not multipart",
        )),
    );
    assert_error(&reply, 400, "invalid_multipart", None);
}

/// No file part, a file of an unsupported type, and a supported type that does not decode.
fn check_missing_file_and_unsupported_audio(server: &Server) {
    // No file part (also when the other fields are wrong: missing_file comes first).
    let reply = server.transcribe(&Form::new().text("model", "whisper-1"));
    assert_error(&reply, 400, "missing_file", Some("file"));
    let reply = server.transcribe(
        &Form::new()
            .text("response_format", "srt")
            .text("languages", "xx"),
    );
    assert_error(&reply, 400, "missing_file", Some("file"));
    let reply = server.transcribe(&Form::new().text("audio", "RIFF"));
    assert_error(&reply, 400, "missing_file", Some("file"));

    // Not a supported type (before response_format and the context fields).
    for name in [
        "unsupported_flac.flac",
        "unsupported_aiff.aiff",
        "unsupported_text.txt",
        "bad_empty.wav",
    ] {
        let reply = server.transcribe(
            &Form::new()
                .file(&audio_fixture(name))
                .text("response_format", "text")
                .text("dictionary", "[1]"),
        );
        assert_error(&reply, 400, "unsupported_audio_type", Some("file"));
    }
    // A supported type that does not decode.
    let reply =
        server.transcribe(&Form::new().file(&audio_fixture("bad_trunc100_mp3_cbr_128k.mp3")));
    assert_error(&reply, 400, "audio_decode_failed", Some("file"));
}

/// A valid wav with a bad response_format or an invalid context field (or a second file).
fn check_invalid_response_format_and_context_fields(server: &Server, wav: &[u8]) {
    let with_wav = || Form::new().file_bytes("a.wav", "audio/wav", wav.to_vec());

    // response_format other than json (before the context fields).
    for format in ["text", "srt", "verbose_json", "vtt", "JSON"] {
        let reply = server.transcribe(
            &with_wav()
                .text("response_format", format)
                .text("languages", "xx"),
        );
        assert_error(
            &reply,
            400,
            "unsupported_response_format",
            Some("response_format"),
        );
    }

    // Invalid context fields: invalid_request naming the field.
    for (field, value) in [
        ("messages", "not json"),
        ("messages", r#"{"role": "user", "content": "x"}"#),
        ("messages", r#"[{"role": "assistant", "content": "x"}]"#),
        ("messages", r#"[{"role": "user"}]"#),
        ("languages", "xx"),
        ("languages", "[]"),
        ("languages", r#"["en", "auto"]"#),
        ("languages", "[1]"),
        ("languages", r#""xx""#),
        ("dictionary", "[1, 2]"),
        ("dictionary", r#"{"term": "x"}"#),
        ("dictionary", "bad\u{7}term"),
        ("language", "klingon"),
        ("prompt", "nul \u{0} inside"),
        ("sounds_like", r#"["win"]"#),
        ("sounds_like", r#"{"Nguyen": "win"}"#),
        ("sounds_like", r#"{"Nguyen": ["win"]}"#),
    ] {
        let reply = server.transcribe(&with_wav().text(field, value));
        assert_error(&reply, 400, "invalid_request", Some(field));
    }
    // `sounds_like` keys must be dictionary terms; forms are words as said; and the
    // dictionary keeps the contract's form, strings only.
    for (dictionary, sounds_like) in [
        ("Nguyen", r#"{"Nguyen": ["win", 3]}"#),
        ("Nguyen", r#"{"Nguyen": ["w1n"]}"#),
        ("Nguyen", r#"{"nguyen": ["win"]}"#),
    ] {
        let form = with_wav()
            .text("dictionary", dictionary)
            .text("sounds_like", sounds_like);
        assert_error(
            &server.transcribe(&form),
            400,
            "invalid_request",
            Some("sounds_like"),
        );
    }
    let reply = server.transcribe(&with_wav().text("dictionary", r#"[{"Nguyen": ["win"]}]"#));
    assert_error(&reply, 400, "invalid_request", Some("dictionary"));
    let reply = server.transcribe(&with_wav().text("dictionary", "a").text("dictionary", "b"));
    assert_error(&reply, 400, "invalid_request", Some("dictionary"));
    let reply = server.transcribe(&with_wav().file_bytes("b.wav", "audio/wav", wav.to_vec()));
    assert_error(&reply, 400, "invalid_request", Some("file"));
}

/// Unknown paths answer 404, wrong methods 405 with `Allow`.
fn check_routing(server: &Server) {
    let reply = server.get("/v1/audio/translations");
    assert_error(&reply, 404, "not_found", None);
    let reply = server.get(TRANSCRIPTIONS);
    assert_error(&reply, 405, "method_not_allowed", None);
    assert_eq!(reply.header("allow"), Some("POST"));
    let reply = server.send("POST", "/health", &[], Some(("text/plain", b"")));
    assert_error(&reply, 405, "method_not_allowed", None);
    assert_eq!(reply.header("allow"), Some("GET"));
}

/// Health, and no authentication without keys (said at startup).
fn check_health_without_keys(server: &Server) {
    let health = server.health();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["auth"], false);
    assert_eq!(health["model"], "ggml-tiny.en.bin");
    assert!(
        server
            .logs()
            .iter()
            .any(|l| l.contains("authentication disabled")),
        "{:?}",
        server.logs()
    );
}

#[test]
fn request_fields_and_openai_compatibility() {
    let server = start(&[], &[]);
    let clip = short_clip();

    // OpenAI's fields, unknown fields and every context field, with the file last.
    let form = Form::new()
        .text("timestamp_granularities[]", "word")
        .text("stream", "false")
        .text("model", "whisper-1")
        .text("temperature", "0")
        .text("response_format", "json")
        .text("prompt", "Directions in New York.")
        .text("language", "en")
        .text(
            "messages",
            r#"[{"role": "system", "content": "Travel notes."},
                {"role": "user", "content": [{"type": "text", "text": "Brooklyn"}], "name": "x"}]"#,
        )
        .text("languages", r#""en""#)
        .text("dictionary", r#"["Brooklyn Bridge", "Manhattan"]"#)
        .text("sounds_like", r#"{"Manhattan": ["man hatton"]}"#)
        .file(&clip);
    let text = assert_text(&server.transcribe(&form));
    assert!(text.to_lowercase().contains("brooklyn"), "{text}");

    // File first; a JSON array of languages; a comma-separated dictionary.
    let form = Form::new()
        .file(&clip)
        .text("languages", r#"["en"]"#)
        .text("dictionary", "Brooklyn Bridge, Manhattan");
    assert_text(&server.transcribe(&form));

    // What OpenAI's SDKs send for lists in extra_body.
    let form = Form::new()
        .file(&clip)
        .text("messages[][role]", "system")
        .text("messages[][role]", "user")
        .text("messages[][content]", "Travel notes.")
        .text("messages[][content]", "Directions.")
        .text("languages[]", "en")
        .text("dictionary[]", "Brooklyn Bridge")
        .text("dictionary[]", "Manhattan");
    assert_text(&server.transcribe(&form));

    // Empty fields mean "not given"; `auto`.
    let form = Form::new()
        .file(&clip)
        .text("messages", "")
        .text("languages", "auto")
        .text("dictionary", " ")
        .text("response_format", "")
        .text("prompt", "");
    assert_text(&server.transcribe(&form));
}

#[test]
fn a_truncated_upload_is_transcribed_and_says_so() {
    // The audio before the cut is transcribed; the header and the log line say the file
    // was cut, streamed or not; the body keeps the contract's shape.
    let server = start(&[], &[]);
    for name in [
        "bad_trunc50_wav_s16_16k_mono.wav",
        "bad_trunc50_webm_opus.webm",
        "bad_trunc50_ogg_opus.ogg",
        "bad_trunc50_mp3_cbr_128k.mp3",
        "bad_trunc50_m4a_aac_faststart.m4a",
    ] {
        let id = format!("trunc-{name}");
        let reply = server.transcribe_with(
            &Form::new().file(&audio_fixture(name)),
            &[("X-Request-Id", id.as_str())],
        );
        let text = assert_text(&reply);
        assert!(!text.is_empty(), "{name}: the audio before the cut");
        assert_eq!(
            reply.header("x-ctxscribe-warning"),
            Some("audio_truncated"),
            "{name}"
        );
        let lines = server.request_log(&id);
        assert_eq!(lines[0]["warnings"], "audio_truncated", "{name}: {lines:?}");
        // Streamed: the header comes with the answer's head, before the first event.
        let (content_type, body) = Form::new()
            .file(&audio_fixture(name))
            .text("stream", "true")
            .encode();
        let head = request_head(
            server.addr,
            "POST",
            TRANSCRIPTIONS,
            &[],
            Some((content_type.as_str(), body.as_slice())),
        );
        let mut stream = TcpStream::connect(server.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .expect("timeout");
        stream.write_all(head.as_bytes()).expect("head");
        stream.write_all(&body).expect("body");
        let mut answer = Vec::new();
        let mut chunk = [0u8; 4096];
        while find(&answer, b"\r\n\r\n").is_none() {
            let read = stream.read(&mut chunk).expect("read the head");
            assert!(read > 0, "{name}: the answer ended before its head");
            answer.extend_from_slice(&chunk[..read]);
        }
        let head = String::from_utf8_lossy(&answer).to_lowercase();
        assert!(head.starts_with("http/1.1 200"), "{name}: {head}");
        assert!(
            head.contains("\r\nx-ctxscribe-warning: audio_truncated\r\n"),
            "{name}: {head}"
        );
    }
    let whole = server.transcribe(&jfk_form());
    assert_text(&whole);
    assert_eq!(whole.header("x-ctxscribe-warning"), None);
}

#[test]
fn one_log_line_per_request_without_audio_or_fields() {
    let server = start(&[], &[]);
    let secret_term = "Zyxwvutsrq";
    let form = jfk_form().text("dictionary", &format!(r#"["{secret_term}"]"#));
    let reply = server.transcribe_with(&form, &[("X-Request-Id", "e2e-log-1")]);
    assert_text(&reply);
    assert_eq!(reply.header("x-request-id"), Some("e2e-log-1"));
    let timing = reply.header("server-timing").expect("Server-Timing");
    assert!(
        timing.contains("decode;dur=") && timing.contains("engine;dur="),
        "{timing}"
    );

    let lines = server.request_log("e2e-log-1");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(line["status"], 200);
    assert_eq!(line["method"], "POST");
    assert_eq!(line["path"], TRANSCRIPTIONS);
    assert!((line["audio_secs"].as_f64().expect("audio_secs") - 11.0).abs() < 0.05);
    for stage in ["read_ms", "queue_ms", "decode_ms", "engine_ms", "total_ms"] {
        assert!(
            line[stage].as_f64().is_some_and(|v| v >= 0.0),
            "{stage}: {line}"
        );
    }
    assert!(line["engine_ms"].as_f64() <= line["total_ms"].as_f64());

    // An error: its code, a generated id, still one line.
    let reply = server.transcribe(&Form::new().text("dictionary", secret_term));
    assert_error(&reply, 400, "missing_file", Some("file"));
    let id = reply
        .header("x-request-id")
        .expect("a generated id")
        .to_owned();
    let lines = server.request_log(&id);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], 400);
    assert_eq!(lines[0]["code"], "missing_file");

    let logs = server.logs().join("\n");
    assert!(!logs.contains(secret_term), "a field leaked into the logs");
    assert!(!logs.contains("RIFF"), "audio leaked into the logs");
}
