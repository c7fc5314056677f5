//! Hostile input: every case gets a bounded, typed answer, the server stays up and its
//! memory returns to where it was.

use super::*;

/// The resident set of a process, from /proc (Linux), in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/<pid>/status")
}

/// The offset of `name`'s payload in a RIFF file (after its 8-byte chunk header).
fn riff_chunk(bytes: &[u8], name: &[u8; 4]) -> usize {
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let size = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        if &bytes[at..at + 4] == name {
            return at + 8;
        }
        at += 8 + size + (size & 1);
    }
    panic!("no {:?} chunk", String::from_utf8_lossy(name))
}

/// The short clip (a wav) with `patch` applied to its bytes.
fn patched_wav(patch: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut wav = std::fs::read(short_clip()).expect("read the short clip");
    patch(&mut wav);
    wav
}

/// A fragmented MP4 whose every `trun` box claims 0xFFFFFFFF samples.
fn fmp4_with_huge_sample_counts() -> Vec<u8> {
    let mut bytes =
        std::fs::read(audio_fixture("ok_m4a_aac_fragmented.m4a")).expect("read the fMP4 fixture");
    let mut patched = 0;
    let mut at = 0;
    while let Some(found) = find(&bytes[at..], b"trun") {
        let count = at + found + 8; // type, then version + flags, then sample_count
        bytes[count..count + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        patched += 1;
        at = count + 4;
    }
    assert!(patched > 0, "no trun box in the fragmented fixture");
    bytes
}

/// One hostile request and the answer it must get.
struct Hostile {
    case: &'static str,
    form: Form,
    status: u16,
    code: &'static str,
    param: Option<&'static str>,
}

fn hostile(
    case: &'static str,
    form: Form,
    status: u16,
    code: &'static str,
    param: Option<&'static str>,
) -> Hostile {
    Hostile {
        case,
        form,
        status,
        code,
        param,
    }
}

/// A form whose `file` part is `wav`.
fn wav_form(wav: &[u8]) -> Form {
    Form::new().file_bytes("a.wav", "audio/wav", wav.to_vec())
}

fn hostile_cases() -> Vec<Hostile> {
    let wav = std::fs::read(short_clip()).expect("read clip");
    let mut cases = duration_bomb_cases();
    cases.extend(lying_size_cases());
    cases.extend(lying_format_cases());
    cases.extend(oversized_field_cases(&wav));
    cases.extend(malformed_field_cases(&wav));
    cases
}

/// Duration bombs: 2 h of silence in ~2 MB (default 3600 s limit).
fn duration_bomb_cases() -> Vec<Hostile> {
    let fixture = |name: &str| Form::new().file(&audio_fixture(name));
    vec![
        hostile(
            "2 h of silence, Ogg Opus (1.9 MB)",
            fixture("bomb_silence_2h_opus.ogg"),
            400,
            "audio_too_long",
            Some("file"),
        ),
        hostile(
            "2 h of silence, WebM Opus (2.0 MB)",
            fixture("bomb_silence_2h_opus.webm"),
            400,
            "audio_too_long",
            Some("file"),
        ),
        hostile(
            "2 h of silence, FLAC (1.3 MB)",
            fixture("bomb_silence_2h.flac"),
            400,
            "unsupported_audio_type",
            Some("file"),
        ),
    ]
}

/// Lying headers: wav chunk sizes that claim 4 GiB.
fn lying_size_cases() -> Vec<Hostile> {
    vec![
        hostile(
            "wav whose data chunk claims 4 GiB",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| {
                    let data = riff_chunk(w, b"data");
                    w[data - 4..data].copy_from_slice(&u32::MAX.to_le_bytes());
                }),
            ),
            400,
            "audio_decode_failed",
            Some("file"),
        ),
        // What streaming recorders write: both sizes 0xFFFFFFFF, the real data shorter.
        hostile(
            "wav whose RIFF and data sizes claim 4 GiB",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| {
                    let data = riff_chunk(w, b"data");
                    w[data - 4..data].copy_from_slice(&u32::MAX.to_le_bytes());
                    w[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
                }),
            ),
            200,
            "",
            None,
        ),
        hostile(
            "wav whose RIFF size claims 4 GiB",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| w[4..8].copy_from_slice(&u32::MAX.to_le_bytes())),
            ),
            200,
            "",
            None,
        ),
    ]
}

/// Lying headers: impossible wav formats and fMP4 sample counts.
fn lying_format_cases() -> Vec<Hostile> {
    vec![
        hostile(
            "wav declaring 0 channels",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| {
                    let fmt = riff_chunk(w, b"fmt ");
                    w[fmt + 2..fmt + 4].copy_from_slice(&0u16.to_le_bytes());
                }),
            ),
            400,
            "audio_decode_failed",
            Some("file"),
        ),
        hostile(
            "wav declaring a 0 Hz sample rate",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| {
                    let fmt = riff_chunk(w, b"fmt ");
                    w[fmt + 4..fmt + 8].copy_from_slice(&0u32.to_le_bytes());
                }),
            ),
            400,
            "audio_decode_failed",
            Some("file"),
        ),
        hostile(
            "wav declaring 4 GHz",
            Form::new().file_bytes(
                "a.wav",
                "audio/wav",
                patched_wav(|w| {
                    let fmt = riff_chunk(w, b"fmt ");
                    w[fmt + 4..fmt + 8].copy_from_slice(&u32::MAX.to_le_bytes());
                }),
            ),
            400,
            "audio_decode_failed",
            Some("file"),
        ),
        hostile(
            "fragmented MP4, every trun claiming 0xFFFFFFFF samples",
            Form::new().file_bytes("a.m4a", "audio/mp4", fmp4_with_huge_sample_counts()),
            400,
            "audio_decode_failed",
            Some("file"),
        ),
    ]
}

/// Hostile JSON and text fields: too deep, too long, too many.
fn oversized_field_cases(wav: &[u8]) -> Vec<Hostile> {
    let mut many_items = wav_form(wav);
    for i in 0..100_000 {
        many_items = many_items.text("dictionary[]", &format!("t{i}"));
    }
    let hundred_k_terms: Vec<String> = (0..100_000).map(|i| format!("term{i}")).collect();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let huge_messages = json!([{"role": "user", "content": "x".repeat(MIB)}]).to_string();
    let long_messages = json!(
        (0..1000)
            .map(|_| json!({"role": "user", "content": "y".repeat(200)}))
            .collect::<Vec<_>>()
    )
    .to_string();
    vec![
        hostile(
            "messages nested 100,000 deep",
            wav_form(wav).text("messages", &deep),
            400,
            "invalid_request",
            Some("messages"),
        ),
        hostile(
            "messages of 1 MiB (limit 256 KiB)",
            wav_form(wav).text("messages", &huge_messages),
            400,
            "invalid_request",
            Some("messages"),
        ),
        hostile(
            "1000 messages",
            wav_form(wav).text("messages", &long_messages),
            400,
            "invalid_request",
            Some("messages"),
        ),
        hostile(
            "messages of 3 MiB (over the 2 MiB field cap)",
            wav_form(wav).text("messages", &"[".repeat(3 * MIB)),
            413,
            "request_too_large",
            Some("messages"),
        ),
        hostile(
            "100,000 dictionary terms, comma list",
            wav_form(wav).text("dictionary", &hundred_k_terms.join(",")),
            400,
            "invalid_request",
            Some("dictionary"),
        ),
        hostile(
            "100,000 dictionary terms, JSON array",
            wav_form(wav).text("dictionary", &json!(hundred_k_terms).to_string()),
            400,
            "invalid_request",
            Some("dictionary"),
        ),
        hostile(
            "100,000 dictionary[] fields",
            many_items,
            400,
            "invalid_request",
            Some("dictionary"),
        ),
    ]
}

/// Hostile JSON and text fields: bad bytes and bad values; then multipart framing.
fn malformed_field_cases(wav: &[u8]) -> Vec<Hostile> {
    vec![
        hostile(
            "messages not UTF-8",
            wav_form(wav).raw(
                "messages",
                b"[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]".to_vec(),
            ),
            400,
            "invalid_request",
            Some("messages"),
        ),
        hostile(
            "dictionary not UTF-8",
            wav_form(wav).raw("dictionary", b"caf\xc3".to_vec()),
            400,
            "invalid_request",
            Some("dictionary"),
        ),
        hostile(
            "NUL bytes in dictionary",
            wav_form(wav).raw("dictionary", b"kube\0ctl,helm".to_vec()),
            400,
            "invalid_request",
            Some("dictionary"),
        ),
        hostile(
            "NUL escaped in messages JSON",
            wav_form(wav).text("messages", r#"[{"role":"user","content":"a\u0000b"}]"#),
            400,
            "invalid_request",
            Some("messages"),
        ),
        hostile(
            "NUL bytes in languages",
            wav_form(wav).raw("languages", b"de\0en".to_vec()),
            400,
            "invalid_request",
            Some("languages"),
        ),
        hostile(
            "NUL bytes as the file",
            Form::new().file_bytes("a.wav", "audio/wav", vec![0; 4096]),
            400,
            "unsupported_audio_type",
            Some("file"),
        ),
        hostile(
            "stream neither true nor false",
            wav_form(wav).text("stream", "yes please"),
            400,
            "invalid_request",
            Some("stream"),
        ),
        hostile(
            "stream of 1 MiB",
            wav_form(wav).text("stream", &"true".repeat(MIB / 4)),
            400,
            "invalid_request",
            Some("stream"),
        ),
        // Multipart framing.
        hostile(
            "two file parts",
            wav_form(wav).file_bytes("b.wav", "audio/wav", wav.to_vec()),
            400,
            "invalid_request",
            Some("file"),
        ),
    ]
}

#[test]
fn hostile_input_gets_bounded_typed_answers_and_memory_returns_to_baseline() {
    let server = start(&[], &[]);
    let pid = server.child.id();
    let cases = hostile_cases();
    // Streaming clients of a 39 s clip (several deltas).
    let long = sse::joined_clip(
        "hostile-39s",
        &[
            "en_whisper_jfk",
            "en_picovoice_quilter",
            "en_ls_file_1221-135766-0001",
            "en_fw_stereo_left",
        ],
    );
    let run_round = |round: usize| {
        check_hostile_cases(&server, &cases, round);
        check_raw_framing_errors(&server);
        check_endless_part_header(&server);
        check_abandoned_streams(&server, &long);
    };

    // Round 0 warms the allocator; the baseline is taken after it.
    run_round(0);
    let baseline = rss_kib(pid);
    for round in 1..=2 {
        run_round(round);
    }
    let after = rss_kib(pid);
    eprintln!("hostile: server RSS {baseline} KiB after round 0, {after} KiB after 2 more rounds");
    let logs = server.logs();
    let cancelled = logs
        .iter()
        .filter(|l| l.contains("transcription cancelled"));
    eprintln!(
        "hostile: {} streams cancelled by a hang-up",
        cancelled.count()
    );
    // Every round sends ~40 MB; a leak of any request's body or decoded audio would show.
    assert!(
        after <= baseline + 64 * 1024,
        "RSS grew from {baseline} KiB to {after} KiB"
    );
    let health = server.health();
    assert_eq!(
        (health["in_flight"].clone(), health["waiting"].clone()),
        (json!(0), json!(0))
    );
    assert_text(&server.transcribe(&Form::new().file(&short_clip())));
}

/// Every hostile case gets its expected answer (printed in round 0).
fn check_hostile_cases(server: &Server, cases: &[Hostile], round: usize) {
    for case in cases {
        let reply = server.transcribe(&case.form);
        if case.status == 200 {
            assert_eq!(reply.status, 200, "{}: {}", case.case, reply.text());
            assert_text(&reply);
        } else {
            assert_error(&reply, case.status, case.code, case.param);
        }
        if round == 0 {
            eprintln!(
                "hostile: {:<58} -> {} {}",
                case.case, reply.status, case.code
            );
        }
    }
}

/// Raw framing errors that the Form builder cannot express.
fn check_raw_framing_errors(server: &Server) {
    // (content type, body, status, code, param)
    type RawCase = (
        &'static str,
        &'static [u8],
        u16,
        &'static str,
        Option<&'static str>,
    );
    let raw_cases: [RawCase; 4] = [
        (
            "multipart/form-data; boundary=b",
            b"--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nRIFF",
            400,
            "invalid_multipart",
            None,
        ),
        (
            "multipart/form-data; boundary=b",
            b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n",
            400,
            "missing_file",
            Some("file"),
        ),
        (
            "multipart/form-data; boundary=b",
            b"--b\r\n\r\n\r\n--b--\r\n",
            400,
            "invalid_multipart",
            None,
        ),
        (
            "multipart/form-data; boundary=",
            b"--\r\n\r\n",
            400,
            "invalid_multipart",
            None,
        ),
    ];
    for (content_type, body, status, code, param) in raw_cases {
        let reply = server.send("POST", TRANSCRIPTIONS, &[], Some((content_type, body)));
        assert_error(&reply, status, code, param);
    }
}

/// A part whose headers go on for 1 MiB: multer buffers them (bounded by the body
/// limit), then the 4-byte "file" does not decode.
fn check_endless_part_header(server: &Server) {
    let mut body = b"--b\r\nContent-Disposition: form-data; name=\"file\"\r\nX-Pad: ".to_vec();
    body.resize(body.len() + MIB, b'a');
    body.extend_from_slice(b"\r\n\r\nRIFF\r\n--b--\r\n");
    let reply = server.send(
        "POST",
        TRANSCRIPTIONS,
        &[],
        Some(("multipart/form-data; boundary=b", &body)),
    );
    assert_error(&reply, 400, "audio_decode_failed", Some("file"));
}

/// Streaming clients of `long`: one that reads nothing until its transcription is over,
/// then hangs up; one that hangs up after the first delta.
fn check_abandoned_streams(server: &Server, long: &Path) {
    let unread = sse::send(server, long, &[("stream", "true")]);
    server.wait_for_places(1, 0, Duration::from_secs(60), "an unread stream starts");
    server.wait_for_places(0, 0, Duration::from_secs(120), "an unread stream ends");
    drop(unread);
    let mut hangs_up = sse::send(server, long, &[("stream", "true")]);
    assert!(sse::read_until(&mut hangs_up, b"transcript.text.delta"));
    drop(hangs_up);
    server.wait_for_places(0, 0, Duration::from_secs(60), "a stream hung up mid-way");
}

/// Sends `head` then `body` one byte every `every`, until the server answers or closes.
fn drip(addr: SocketAddr, head: &[u8], body: &[u8], every: Duration) -> Reply {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let _ = stream.write_all(head);
    let mut reader = stream.try_clone().expect("clone the stream");
    let (done, finished) = mpsc::channel();
    let body = body.to_vec();
    let writer = std::thread::spawn(move || {
        for byte in body {
            if finished.try_recv().is_ok() || stream.write_all(&[byte]).is_err() {
                break;
            }
            std::thread::sleep(every);
        }
    });
    let reply = read_reply(&mut reader, started);
    let _ = done.send(());
    writer.join().expect("writer");
    reply
}

#[test]
fn slow_drip_uploads_and_clients_that_hang_up() {
    // A short request timeout for the drip; the rest on a server with the default.
    let impatient = start(&["--request-timeout", "3"], &[]);
    let server = start(&["--max-concurrent", "1"], &[]);
    let (content_type, body) = Form::new().file(&short_clip()).encode();
    let head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );

    // Slowloris on the body: a byte every 50 ms keeps the connection busy, but the
    // request timeout (from the first byte) ends it with 408.
    let reply = drip(
        impatient.addr,
        head.as_bytes(),
        &body,
        Duration::from_millis(50),
    );
    assert_error(&reply, 408, "request_timeout", None);

    // Slowloris on the headers, 50 connections at once: the server still answers others.
    let dribblers: Vec<TcpStream> = (0..50)
        .map(|_| {
            let mut s = TcpStream::connect(server.addr).expect("connect");
            s.write_all(b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .expect("write");
            s
        })
        .collect();
    assert_text(&server.transcribe(&Form::new().file(&short_clip())));
    assert_eq!(server.health()["waiting"], 0);
    drop(dribblers);

    // A client that disconnects mid-upload: its place is freed.
    for _ in 0..5 {
        let mut stream = TcpStream::connect(server.addr).expect("connect");
        stream.write_all(head.as_bytes()).expect("head");
        stream
            .write_all(&body[..body.len() / 2])
            .expect("half the body");
        drop(stream);
    }
    // Their places are freed (the server notices the hang-ups asynchronously).
    server.wait_for_places(
        0,
        0,
        Duration::from_secs(60),
        "hung-up uploads still hold places",
    );
    // A client that disconnects mid-transcription: its transcription is cancelled at the
    // engine's next step and frees its slot; nothing is left running.
    let (content_type, jfk_body) = jfk_form().encode();
    let jfk_head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        jfk_body.len()
    );
    let mut stream = TcpStream::connect(server.addr).expect("connect");
    stream.write_all(jfk_head.as_bytes()).expect("head");
    stream.write_all(&jfk_body).expect("body");
    // Generous: other tests of this binary load the CPU at the same time.
    let deadline = Instant::now() + Duration::from_secs(120);
    while server.health()["in_flight"] != 1 {
        if Instant::now() >= deadline {
            // Say what the server answered instead, if anything.
            let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
            let mut reply = Vec::new();
            let _ = stream.read_to_end(&mut reply);
            panic!(
                "the transcription never started; the server said: {}",
                String::from_utf8_lossy(&reply)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(stream);
    server.wait_for_places(0, 0, Duration::from_secs(30), "a slot stayed taken");
    // Still serving.
    assert_text(&server.transcribe(&Form::new().file(&short_clip())));
}

#[test]
fn sigterm_under_load_finishes_the_queue_and_refuses_new_requests() {
    let mut server = start(&["--max-concurrent", "1", "--max-queue", "8"], &[]);
    let addr = server.addr;
    let (content_type, body) = jfk_form().encode();
    let head = format!(
        "POST {TRANSCRIPTIONS} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let request = Arc::new((head, body));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let request = Arc::clone(&request);
            std::thread::spawn(move || exchange(addr, request.0.as_bytes(), &request.1))
        })
        .collect();
    // One transcribing, the others admitted and waiting for the engine.
    server.wait_for_places(1, 3, Duration::from_secs(60), "the load never built up");
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());

    // New requests are refused: no connection, or a 503 (health says draining), never
    // a transcription.
    std::thread::sleep(Duration::from_millis(200));
    if let Ok(mut stream) = TcpStream::connect(addr) {
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let _ = stream.write_all(request.0.as_bytes());
        let _ = stream.write_all(&request.1);
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 503"),
            "a new request was served while draining: {answer}"
        );
    }
    // Every request admitted before the signal is transcribed.
    for client in clients {
        let reply = client.join().expect("client thread");
        assert!(wer(JFK, &assert_text(&reply)) <= 0.1);
    }
    let exit = server.wait_exit(Duration::from_secs(60));
    assert!(exit.success(), "{exit}");
    let logs = server.logs().join("\n");
    assert!(logs.contains("all requests finished"), "{logs}");
}
