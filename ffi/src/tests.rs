//! Model-free tests of the ABI from Rust: statuses, the panic guard, NULL handling and
//! request validation. Transcription on real audio is tested from C
//! (`ffi/tests/run-c-tests.sh`).

use std::ffi::{CStr, CString, c_char};
use std::ptr::{null, null_mut};

use crate::config::*;
use crate::error::*;
use crate::ptr::guard_or;
use crate::request::*;
use crate::transcriber::*;
use crate::transcript::*;

/// Owned copy of a C string from the library.
fn owned(text: *const c_char) -> Option<String> {
    // SAFETY: the library returns NULL or a NUL-terminated string that lives at least
    // until the object it is borrowed from is freed, which happens after this copy.
    unsafe { text.as_ref() }.map(|_| {
        // SAFETY: as above; not NULL.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    })
}

/// Status, code, param and message of an error object, which is freed.
fn take(error: *mut ctxscribe_error) -> (ctxscribe_status, String, Option<String>, String) {
    assert!(!error.is_null(), "an error object was expected");
    // SAFETY: `error` is a live error object made by the library, freed last.
    let parts = unsafe {
        (
            ctxscribe_error_status(error),
            owned(ctxscribe_error_code(error)).unwrap_or_default(),
            owned(ctxscribe_error_param(error)),
            owned(ctxscribe_error_message(error)).unwrap_or_default(),
        )
    };
    // SAFETY: `error` is live and not used afterwards.
    unsafe { ctxscribe_error_free(error) };
    parts
}

fn c(text: &str) -> CString {
    CString::new(text).expect("no NUL in test strings")
}

#[test]
fn status_values_are_explicit_and_stable() {
    let expected = [
        (ctxscribe_status::Ok, 0, "ok"),
        (ctxscribe_status::InvalidRequest, 1, "invalid_request"),
        (
            ctxscribe_status::UnsupportedAudioType,
            2,
            "unsupported_audio_type",
        ),
        (
            ctxscribe_status::AudioDecodeFailed,
            3,
            "audio_decode_failed",
        ),
        (ctxscribe_status::FileTooLarge, 4, "file_too_large"),
        (ctxscribe_status::AudioTooLong, 5, "audio_too_long"),
        (ctxscribe_status::ModelUnavailable, 6, "model_unavailable"),
        (
            ctxscribe_status::TranscriptionFailed,
            7,
            "transcription_failed",
        ),
        (ctxscribe_status::Cancelled, 8, "cancelled"),
        (ctxscribe_status::DeadlineExceeded, 9, "deadline_exceeded"),
        (ctxscribe_status::NullArgument, 100, "null_argument"),
        (ctxscribe_status::Panic, 101, "panic"),
        (ctxscribe_status::UnknownError, 102, "unknown_error"),
    ];
    for (status, value, code) in expected {
        assert_eq!(status as u32, value, "{status:?}");
        assert_eq!(status.code().to_str(), Ok(code));
        assert_eq!(owned(ctxscribe_status_code(value)).as_deref(), Some(code));
    }
    for not_a_status in [10, 99, 103, u32::MAX] {
        assert!(ctxscribe_status_code(not_a_status).is_null());
    }
}

#[test]
fn every_library_error_maps_to_its_status() {
    use ctxscribe::Error;
    let errors = [
        (
            Error::InvalidRequest {
                param: "languages",
                message: "x".into(),
            },
            ctxscribe_status::InvalidRequest,
        ),
        (
            Error::UnsupportedAudioType {
                detected: "flac".into(),
            },
            ctxscribe_status::UnsupportedAudioType,
        ),
        (
            Error::AudioDecode {
                message: "x".into(),
                source: None,
            },
            ctxscribe_status::AudioDecodeFailed,
        ),
        (
            Error::FileTooLarge { size: 2, limit: 1 },
            ctxscribe_status::FileTooLarge,
        ),
        (
            Error::AudioTooLong { limit_secs: 1.0 },
            ctxscribe_status::AudioTooLong,
        ),
        (
            Error::ModelUnavailable {
                message: "x".into(),
                source: None,
            },
            ctxscribe_status::ModelUnavailable,
        ),
        (
            Error::TranscriptionFailed {
                message: "x".into(),
                source: None,
            },
            ctxscribe_status::TranscriptionFailed,
        ),
        (Error::Cancelled, ctxscribe_status::Cancelled),
        (Error::DeadlineExceeded, ctxscribe_status::DeadlineExceeded),
    ];
    for (error, status) in errors {
        let code = error.code().as_str();
        let failure = Failure::from(error);
        assert_eq!(failure.status, status, "{code}");
        assert_eq!(status.code().to_str(), Ok(code));
    }
    for code in ctxscribe::ErrorCode::ALL {
        let status = ctxscribe_status::from(code);
        assert_eq!(status.code().to_str(), Ok(code.as_str()));
        assert!((1..100).contains(&(status as u32)), "{code}");
    }
    assert_eq!(
        ctxscribe_status::from_code("a_code_added_later"),
        ctxscribe_status::UnknownError
    );
    assert_eq!(
        ctxscribe_status::from_code("null_argument"),
        ctxscribe_status::UnknownError,
        "only library codes map to library statuses"
    );
}

#[test]
fn a_panic_becomes_a_status_and_an_error_object() {
    let mut error = null_mut();
    // SAFETY: `&mut error` is valid for writing one pointer.
    let status = unsafe { guard(&mut error, || panic!("boom {}", 42)) };
    assert_eq!(status, ctxscribe_status::Panic);
    let (status, code, param, message) = take(error);
    assert_eq!(status, ctxscribe_status::Panic);
    assert_eq!(code, "panic");
    assert_eq!(param, None);
    assert!(message.contains("boom 42"), "{message}");

    // Without an error object, the status alone.
    // SAFETY: NULL `err_out` is allowed.
    let status = unsafe { guard(null_mut(), || panic!("static message")) };
    assert_eq!(status, ctxscribe_status::Panic);
    assert_eq!(guard_or(7, || panic!("in an accessor")), 7);
}

#[test]
fn free_null_is_a_no_op() {
    // SAFETY: NULL is allowed for every `_free`.
    unsafe {
        ctxscribe_config_free(null_mut());
        ctxscribe_request_free(null_mut());
        ctxscribe_transcriber_free(null_mut());
        ctxscribe_transcript_free(null_mut());
        ctxscribe_error_free(null_mut());
    }
}

#[test]
fn accessors_accept_null() {
    // SAFETY: NULL is allowed for every accessor.
    unsafe {
        assert_eq!(ctxscribe_error_status(null()), ctxscribe_status::Ok);
        assert!(ctxscribe_error_code(null()).is_null());
        assert!(ctxscribe_error_message(null()).is_null());
        assert!(ctxscribe_error_param(null()).is_null());
        assert!(ctxscribe_transcript_text(null()).is_null());
        assert!(ctxscribe_transcript_language(null()).is_null());
        assert!(ctxscribe_transcript_audio_secs(null()).abs() < f64::EPSILON);
        assert!(ctxscribe_transcript_processing_secs(null()).abs() < f64::EPSILON);
        assert!(!ctxscribe_transcriber_is_multilingual(null()));
        assert!(ctxscribe_transcriber_backend(null()).is_null());
    }
}

/// Asserts that `status` and the error object (freed) report the NULL `argument` by name.
fn assert_null_argument(status: ctxscribe_status, error: *mut ctxscribe_error, argument: &str) {
    assert_eq!(status, ctxscribe_status::NullArgument, "{argument}");
    let (status, code, param, message) = take(error);
    assert_eq!(status, ctxscribe_status::NullArgument);
    assert_eq!(code, "null_argument");
    assert_eq!(param.as_deref(), Some(argument));
    assert!(message.contains(argument), "{message}");
}

#[test]
fn null_arguments_are_reported_by_name_and_outputs_untouched() {
    let request = ctxscribe_request_new();
    let config = ctxscribe_config_new();
    let sentinel = std::ptr::dangling_mut::<ctxscribe_transcript>();
    let mut out = sentinel;
    check_null_request_arguments(request);
    check_null_config_arguments();
    check_null_transcriber_arguments(config, request, &mut out);
    // SAFETY: `request` and `config` are live objects made above, freed once here.
    unsafe {
        // NULL err_out: the status alone.
        assert_eq!(
            ctxscribe_request_add_language(request, null(), null_mut()),
            ctxscribe_status::NullArgument
        );
        ctxscribe_request_free(request);
        ctxscribe_config_free(config);
    }
    assert_eq!(out, sentinel, "outputs are written on success only");
}

/// The request setters name their NULL request or NULL text argument.
fn check_null_request_arguments(request: *mut ctxscribe_request) {
    let text = c("de");
    let mut e = null_mut();
    // SAFETY: in every call below, each pointer is NULL, the live request, a
    // NUL-terminated string, or `&mut` of a local.
    unsafe {
        let status = ctxscribe_request_add_language(null_mut(), text.as_ptr(), &mut e);
        assert_null_argument(status, e, "request");
        let status = ctxscribe_request_add_language(request, null(), &mut e);
        assert_null_argument(status, e, "code");
        let status = ctxscribe_request_add_dictionary_term(request, null(), &mut e);
        assert_null_argument(status, e, "term");
        let status = ctxscribe_request_add_message(request, 0, null(), &mut e);
        assert_null_argument(status, e, "content");
        let status = ctxscribe_request_set_messages_json(request, null(), &mut e);
        assert_null_argument(status, e, "json");
        let status = ctxscribe_request_set_languages(request, null(), &mut e);
        assert_null_argument(status, e, "text");
        let status = ctxscribe_request_set_dictionary(request, null(), &mut e);
        assert_null_argument(status, e, "text");
    }
}

/// The config setters name their NULL config.
fn check_null_config_arguments() {
    let mut e = null_mut();
    // SAFETY: in every call below, each pointer is NULL or `&mut` of a local.
    unsafe {
        let status = ctxscribe_config_set_threads(null_mut(), 1, &mut e);
        assert_null_argument(status, e, "config");
        let status = ctxscribe_config_set_model_path(null_mut(), null(), &mut e);
        assert_null_argument(status, e, "config");
        let status = ctxscribe_config_disable_vad(null_mut(), &mut e);
        assert_null_argument(status, e, "config");
    }
}

/// Creating a transcriber names its NULL `out`; transcribing names the NULL transcriber,
/// and leaves `out` untouched.
fn check_null_transcriber_arguments(
    config: *mut ctxscribe_config,
    request: *mut ctxscribe_request,
    out: &mut *mut ctxscribe_transcript,
) {
    let bytes = [0_u8; 4];
    let samples = [0.0_f32; 4];
    let mut e = null_mut();
    // SAFETY: in every call below, each pointer is NULL, a live object made by the
    // caller, a readable buffer of the given length, or `&mut` of a local.
    unsafe {
        let status = ctxscribe_transcriber_new(config, null_mut(), &mut e);
        assert_null_argument(status, e, "out");
        let status = ctxscribe_transcriber_transcribe(
            null(),
            request,
            bytes.as_ptr(),
            bytes.len(),
            &mut *out,
            &mut e,
        );
        assert_null_argument(status, e, "transcriber");
        let status = ctxscribe_transcriber_transcribe_pcm(
            null(),
            null(),
            samples.as_ptr(),
            samples.len(),
            16_000,
            &mut *out,
            &mut e,
        );
        assert_null_argument(status, e, "transcriber");
    }
}

/// Adds `code` and returns the status and, on failure, the error's param and message.
fn add_language(request: *mut ctxscribe_request, code: &[u8]) -> (ctxscribe_status, String) {
    let code = CString::new(code).expect("no NUL");
    let mut error = null_mut();
    // SAFETY: a live request, a NUL-terminated string, `&mut` of a local.
    let status = unsafe { ctxscribe_request_add_language(request, code.as_ptr(), &mut error) };
    if status == ctxscribe_status::Ok {
        assert!(error.is_null());
        return (status, String::new());
    }
    let (_, code, param, message) = take(error);
    assert_eq!(code, "invalid_request");
    assert_eq!(param.as_deref(), Some("languages"));
    (status, message)
}

#[test]
fn languages_are_validated_when_added_and_named_by_position() {
    let request = ctxscribe_request_new();
    assert_eq!(add_language(request, b"de").0, ctxscribe_status::Ok);
    assert_eq!(add_language(request, b"English").0, ctxscribe_status::Ok);
    let (status, message) = add_language(request, b"xx");
    assert_eq!(status, ctxscribe_status::InvalidRequest);
    assert!(
        message.contains("languages[2]") && message.contains("xx"),
        "{message}"
    );
    let (status, message) = add_language(request, b"auto");
    assert_eq!(status, ctxscribe_status::InvalidRequest);
    assert!(message.contains("auto"), "{message}");
    let (status, message) = add_language(request, b"d\xffe");
    assert_eq!(status, ctxscribe_status::InvalidRequest);
    assert!(
        message.contains("languages[2] is not valid UTF-8"),
        "{message}"
    );
    // Failed adds left the request as it was.
    // SAFETY: `request` is live and not changed during the call.
    let context = unsafe { request.as_ref() }.map(ctxscribe_request::context);
    let languages = context.expect("live").expect("valid").languages;
    assert_eq!(
        languages,
        ctxscribe::Languages::from_codes(["de", "en"]).expect("valid")
    );
    // SAFETY: live, freed once.
    unsafe { ctxscribe_request_free(request) };
}

#[test]
fn terms_and_messages_are_validated_with_the_library_rules() {
    let request = ctxscribe_request_new();
    let mut error = null_mut();
    let term = |text: &str, error: &mut *mut ctxscribe_error| {
        let text = c(text);
        // SAFETY: a live request, a NUL-terminated string, `&mut` of a local.
        unsafe { ctxscribe_request_add_dictionary_term(request, text.as_ptr(), error) }
    };
    assert_eq!(term(" kubectl ", &mut error), ctxscribe_status::Ok);
    assert_eq!(
        term("", &mut error),
        ctxscribe_status::Ok,
        "empty terms are dropped"
    );
    assert_eq!(
        term("kubectl", &mut error),
        ctxscribe_status::Ok,
        "duplicates too"
    );
    assert_eq!(
        term("two\nlines", &mut error),
        ctxscribe_status::InvalidRequest
    );
    let (_, _, param, message) = take(error);
    assert_eq!(param.as_deref(), Some("dictionary"));
    assert!(message.contains("dictionary[3]"), "{message}");
    error = null_mut();
    assert_eq!(
        term(&"x".repeat(101), &mut error),
        ctxscribe_status::InvalidRequest
    );
    take(error);

    let content = c("Editing user_service.py");
    // SAFETY: both calls get a live request, a NUL-terminated string, `&mut` of a local.
    unsafe {
        let role = ctxscribe_role::User as u32;
        let status = ctxscribe_request_add_message(request, role, content.as_ptr(), null_mut());
        assert_eq!(status, ctxscribe_status::Ok);
        error = null_mut();
        let status = ctxscribe_request_add_message(request, 2, content.as_ptr(), &mut error);
        assert_eq!(status, ctxscribe_status::InvalidRequest);
    }
    let (_, _, param, message) = take(error);
    assert_eq!(param.as_deref(), Some("messages"));
    assert!(message.contains("messages[1].role"), "{message}");

    // SAFETY: `request` is live and not changed during the call.
    let context = unsafe { request.as_ref() }.map(ctxscribe_request::context);
    let context = context.expect("live").expect("valid");
    assert_eq!(context.dictionary.terms(), ["kubectl"]);
    assert_eq!(
        context.messages,
        [ctxscribe::Message::user("Editing user_service.py")]
    );
    // SAFETY: live, freed once.
    unsafe { ctxscribe_request_free(request) };
}

#[test]
fn wire_text_setters_use_the_library_parsers() {
    let request = ctxscribe_request_new();
    let set = |f: unsafe extern "C" fn(
        *mut ctxscribe_request,
        *const c_char,
        *mut *mut ctxscribe_error,
    ) -> ctxscribe_status,
               text: &str| {
        let text = c(text);
        let mut error = null_mut();
        // SAFETY: a live request, a NUL-terminated string, `&mut` of a local.
        let status = unsafe { f(request, text.as_ptr(), &mut error) };
        let detail = (!error.is_null()).then(|| take(error));
        (status, detail)
    };
    assert_eq!(
        set(ctxscribe_request_set_languages, "de, en").0,
        ctxscribe_status::Ok
    );
    assert_eq!(
        set(
            ctxscribe_request_set_dictionary,
            r#"["Ramipril", "Dr. Müller"]"#
        )
        .0,
        ctxscribe_status::Ok
    );
    let messages = r#"[{"role":"system","content":"Cardiology notes."}]"#;
    assert_eq!(
        set(ctxscribe_request_set_messages_json, messages).0,
        ctxscribe_status::Ok
    );
    // SAFETY: `request` is live and not changed during the call.
    let context = unsafe { request.as_ref() }.map(ctxscribe_request::context);
    let context = context.expect("live").expect("valid");
    assert_eq!(
        context.languages,
        ctxscribe::Languages::from_codes(["de", "en"]).expect("valid")
    );
    assert_eq!(context.dictionary.terms(), ["Ramipril", "Dr. Müller"]);
    assert_eq!(context.messages.len(), 1);

    let (status, detail) = set(
        ctxscribe_request_set_messages_json,
        r#"[{"role":"assistant","content":"hi"}]"#,
    );
    assert_eq!(status, ctxscribe_status::InvalidRequest);
    let (_, _, param, message) = detail.expect("an error object");
    assert_eq!(param.as_deref(), Some("messages"));
    assert!(message.contains("assistant"), "{message}");
    let (status, _) = set(ctxscribe_request_set_languages, "[]");
    assert_eq!(status, ctxscribe_status::InvalidRequest);
    // "auto" resets to detection.
    assert_eq!(
        set(ctxscribe_request_set_languages, "auto").0,
        ctxscribe_status::Ok
    );
    // SAFETY: `request` is live and not changed during the call.
    let context = unsafe { request.as_ref() }.map(ctxscribe_request::context);
    assert!(context.expect("live").expect("valid").languages.is_auto());
    // SAFETY: live, freed once.
    unsafe { ctxscribe_request_free(request) };
}

#[test]
fn config_options_are_checked() {
    let config = ctxscribe_config_new();
    let max = CTXSCRIBE_MAX_THREADS;
    // SAFETY: every call gets a live config and NULL or `&mut` of a local.
    unsafe {
        let accepted = [
            ctxscribe_config_set_beam_size(config, 5, null_mut()),
            ctxscribe_config_set_beam_size(config, 0, null_mut()),
            ctxscribe_config_set_threads(config, max, null_mut()),
            ctxscribe_config_set_timeout_ms(config, 1, null_mut()),
            ctxscribe_config_set_max_file_bytes(config, 0, null_mut()),
        ];
        assert_eq!(accepted, [ctxscribe_status::Ok; 5]);
        let param = invalid_param(|e| ctxscribe_config_set_beam_size(config, 9, e));
        assert_eq!(param.as_deref(), Some("beam_size"));
        let param = invalid_param(|e| ctxscribe_config_set_max_duration_secs(config, f64::NAN, e));
        assert_eq!(param.as_deref(), Some("max_duration_secs"));
        let param = invalid_param(|e| ctxscribe_config_set_threads(config, max + 1, e));
        assert_eq!(param.as_deref(), Some("threads"));
        ctxscribe_config_free(config);
    }
}

/// The param of the `invalid_request` that `call` fails with (the error object is freed).
fn invalid_param(
    call: impl FnOnce(*mut *mut ctxscribe_error) -> ctxscribe_status,
) -> Option<String> {
    let mut error = null_mut();
    assert_eq!(call(&mut error), ctxscribe_status::InvalidRequest);
    take(error).2
}

#[test]
fn a_missing_model_is_model_unavailable_and_writes_no_transcriber() {
    let config = ctxscribe_config_new();
    let path = c("/nonexistent/ggml-model.bin");
    let sentinel = std::ptr::dangling_mut::<ctxscribe_transcriber>();
    let mut transcriber = sentinel;
    let mut error = null_mut();
    // SAFETY: a live config, a NUL-terminated string, `&mut` of locals.
    let status = unsafe {
        assert_eq!(
            ctxscribe_config_set_model_path(config, path.as_ptr(), null_mut()),
            ctxscribe_status::Ok
        );
        let status = ctxscribe_transcriber_new(config, &mut transcriber, &mut error);
        ctxscribe_config_free(config);
        status
    };
    assert_eq!(status, ctxscribe_status::ModelUnavailable);
    assert_eq!(transcriber, sentinel);
    let (status, code, param, message) = take(error);
    assert_eq!(
        (status, code.as_str(), param),
        (status, "model_unavailable", None)
    );
    assert!(message.contains("make setup"), "{message}");
}

#[test]
fn version_is_the_crate_version() {
    assert_eq!(
        owned(crate::ctxscribe_version()).as_deref(),
        Some(env!("CARGO_PKG_VERSION"))
    );
}
