//! Authentication: API keys in either header, and their edge cases.

use super::*;

#[test]
fn api_keys_in_either_header() {
    let dir = repo_root().join(format!("target/tmp/server-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let key_file = dir.join("keys.txt");
    std::fs::write(&key_file, "# ops team\nsk-file-key-0003\n").expect("write key file");
    let server = start(
        &["--api-key-file", key_file.to_str().expect("utf-8 path")],
        &[("CTXSCRIBE_API_KEYS", "sk-env-key-0001, sk-env-key-0002")],
    );
    let cheap = Form::new().text("model", "whisper-1"); // passes auth, then missing_file

    // Missing or wrong keys: 401 before anything else.
    for headers in [
        &[][..],
        &[("Authorization", "Bearer sk-wrong")][..],
        &[("Authorization", "Bearer sk-env-key-000")][..],
        &[("Authorization", "Bearer sk-env-key-00011")][..],
        &[("Authorization", "Basic c2stZW52LWtleS0wMDAx")][..],
        &[("Authorization", "sk-env-key-0001")][..],
        &[("X-Api-Key", "sk-wrong")][..],
        &[("X-Api-Key", "")][..],
    ] {
        let reply = server.transcribe_with(&cheap, headers);
        assert_error(&reply, 401, "invalid_api_key", None);
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
        assert!(!reply.text().contains("sk-env-key"), "{}", reply.text());
    }
    let reply = server.send(
        "POST",
        TRANSCRIPTIONS,
        &[],
        Some(("application/json", b"{}")),
    );
    assert_error(&reply, 401, "invalid_api_key", None);

    // Right keys, from the environment and the file, in both headers.
    for headers in [
        &[("Authorization", "Bearer sk-env-key-0001")][..],
        &[("Authorization", "bearer sk-env-key-0002")][..],
        &[("X-Api-Key", "sk-env-key-0001")][..],
        &[("X-Api-Key", "sk-file-key-0003")][..],
        &[("Authorization", "Bearer sk-file-key-0003")][..],
    ] {
        let reply = server.transcribe_with(&cheap, headers);
        assert_error(&reply, 400, "missing_file", Some("file"));
    }
    let reply = server.send(
        "POST",
        TRANSCRIPTIONS,
        &[("X-Api-Key", "sk-env-key-0002")],
        Some(("application/json", b"{}")),
    );
    assert_error(&reply, 415, "unsupported_media_type", None);
    let reply = server.transcribe_with(&jfk_form(), &[("X-Api-Key", "sk-file-key-0003")]);
    assert!(wer(JFK, &assert_text(&reply)) <= 0.1);
    let reply = server.transcribe_with(
        &Form::new().file(&short_clip()),
        &[("Authorization", "Bearer sk-env-key-0002")],
    );
    assert_text(&reply);

    // Health needs no key.
    assert_eq!(server.health()["auth"], true);

    let logs = server.logs().join("\n");
    assert!(logs.contains("authentication enabled"), "{logs}");
    for secret in ["sk-env-key", "sk-file-key", "sk-wrong", "c2stZW52"] {
        assert!(!logs.contains(secret), "{secret} leaked into the logs");
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn api_key_edge_cases() {
    let server = start(
        &[],
        &[("CTXSCRIBE_API_KEYS", "  sk-padded-0001  ,sk-second-0002")],
    );
    let cheap = Form::new().text("model", "whisper-1"); // passes auth, then missing_file
    let refused: &[&[(&str, &str)]] = &[
        // The key in a header the server does not read.
        &[("Api-Key", "sk-padded-0001")],
        &[("X-Auth-Token", "sk-padded-0001")],
        &[("Proxy-Authorization", "Bearer sk-padded-0001")],
        &[("Authorization", "Token sk-padded-0001")],
        &[("Authorization", "sk-padded-0001")],
        // Empty keys.
        &[("Authorization", "Bearer")],
        &[("Authorization", "Bearer   ")],
        &[("X-Api-Key", "   ")],
        // The configured key with its padding, or cut, or with inner whitespace.
        &[("X-Api-Key", "sk-padded-0001x")],
        &[("X-Api-Key", "sk-padded- 0001")],
        &[("Authorization", "Bearer sk-padded-000")],
        // Several guesses in one request.
        &[
            ("Authorization", "Bearer sk-guess-1"),
            ("Authorization", "Bearer sk-second-0002"),
        ],
        &[("X-Api-Key", "sk-guess-2"), ("X-Api-Key", "sk-padded-0001")],
    ];
    for headers in refused {
        let reply = server.transcribe_with(&cheap, headers);
        assert_error(&reply, 401, "invalid_api_key", None);
    }
    // Configured with padding, presented with or without it: the same key.
    for headers in [
        &[("X-Api-Key", "sk-padded-0001")][..],
        &[("X-Api-Key", "  sk-padded-0001  ")][..],
        &[("Authorization", "Bearer    sk-padded-0001 ")][..],
        &[("Authorization", "BEARER sk-second-0002")][..],
        // Both headers, one right: allowed (a proxy may add the other).
        &[
            ("Authorization", "Bearer sk-wrong"),
            ("X-Api-Key", "sk-second-0002"),
        ][..],
    ] {
        let reply = server.transcribe_with(&cheap, headers);
        assert_error(&reply, 400, "missing_file", Some("file"));
    }
    let logs = server.logs().join("\n");
    for secret in ["sk-padded", "sk-second", "sk-guess", "sk-wrong"] {
        assert!(!logs.contains(secret), "{secret} leaked into the logs");
    }
}
