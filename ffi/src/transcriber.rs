//! `ctxscribe_transcriber`: a loaded model, shared by any number of threads.

use std::ffi::{CString, c_char};
use std::ptr::null;

use ctxscribe::{Audio, AudioLimits, CheckedAudio, ContextTranscriber, TranscriptionRequest};

use crate::config::ctxscribe_config;
use crate::error::{Failure, c_ptr, c_string, ctxscribe_error, ctxscribe_status, guard};
use crate::ptr::guard_or;
use crate::ptr::{self, NullArgument};
use crate::request::{Context, ctxscribe_request};
use crate::run::{self, ctxscribe_run_options};
use crate::transcript::ctxscribe_transcript;

/// A loaded Whisper model that transcribes audio with context.
///
/// Created by `ctxscribe_transcriber_new()`, freed by `ctxscribe_transcriber_free()`.
/// Thread-safe: one transcriber may be used by any number of threads at once; each call
/// has its own decoder state and uses the configured number of engine threads.
#[derive(Debug)]
pub struct ctxscribe_transcriber {
    inner: ContextTranscriber,
    /// `ctxscribe_transcriber_backend()`'s answer, kept as long as the transcriber.
    backend: CString,
}

/// Creates a transcriber, loading the model (and the VAD model) once.
///
/// Blocks while the model loads: from a fraction of a second to several seconds for
/// large models.
///
/// Errors: `CTXSCRIBE_STATUS_MODEL_UNAVAILABLE` when the model or the VAD model is
/// missing or cannot be loaded (the message says which and how to install it).
/// NULL rules: `config` may be NULL for every default; `out` must not be NULL
/// (`CTXSCRIBE_STATUS_NULL_ARGUMENT`). `*out` is written on success only. `err_out` may
/// be NULL; otherwise, on failure only, `*err_out` receives an error object to free with
/// `ctxscribe_error_free()`.
/// Ownership: the caller owns `*out` and frees it with `ctxscribe_transcriber_free()`;
/// `config` is only read and may be freed right after this call.
/// Thread safety: any thread, as long as no other thread changes `config` meanwhile.
///
/// # Safety
///
/// `config` is NULL or a live config; `out` is NULL or valid for writing one pointer;
/// `err_out` is NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcriber_new(
    config: *const ctxscribe_config,
    out: *mut *mut ctxscribe_transcriber,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    let body = || {
        let out = ptr::out_slot(out, "out")?;
        // SAFETY: `config` is NULL or a live config nobody changes meanwhile (contract).
        let builder = match unsafe { config.as_ref() } {
            Some(config) => config.builder(),
            None => ContextTranscriber::builder(),
        };
        let inner = builder.build()?;
        let backend = c_string(
            &inner
                .backend()
                .map_or_else(|| "remote".to_owned(), |backend| backend.to_string()),
        );
        // SAFETY: `out` is valid for writing one pointer (contract; checked not NULL).
        unsafe { ptr::write_out(out, ctxscribe_transcriber { inner, backend }) };
        Ok(())
    };
    // SAFETY: `err_out` is NULL or valid for writing one pointer (this function's contract).
    unsafe { guard(err_out, body) }
}

/// Frees a transcriber and its model.
///
/// NULL rules: `ctxscribe_transcriber_free(NULL)` does nothing.
/// Thread safety: only once every call using `transcriber` has returned, in all
/// threads. Does not block (beyond releasing memory).
///
/// # Safety
///
/// `transcriber` is NULL or a transcriber from `ctxscribe_transcriber_new()` not freed
/// yet; no other thread uses it, and it must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcriber_free(transcriber: *mut ctxscribe_transcriber) {
    // SAFETY: NULL or owned by the caller, unused elsewhere and never used again (contract).
    unsafe { ptr::free(transcriber) }
}

/// Whether the loaded model knows more languages than English (false for `*.en`
/// models, which can only transcribe English).
///
/// NULL rules: returns false if `transcriber` is NULL.
/// Thread safety: any thread, concurrently with other calls. Does not block.
///
/// # Safety
///
/// `transcriber` is NULL or a live transcriber.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcriber_is_multilingual(
    transcriber: *const ctxscribe_transcriber,
) -> bool {
    // SAFETY: `transcriber` is NULL or live (contract).
    let transcriber = unsafe { transcriber.as_ref() };
    guard_or(false, || {
        transcriber.is_some_and(|t| t.inner.is_multilingual())
    })
}

/// The device the engine runs on, as text: `CPU (<kernels>)`, or the GPU's ggml name
/// and description (`Vulkan0 (<device>)`), followed by why no GPU was used when a GPU
/// build found none (`CTXSCRIBE_DEVICE=auto`); `remote` with a remote speech provider.
///
/// NULL rules: returns NULL if `transcriber` is NULL.
/// Ownership: the string belongs to the transcriber; it stays valid until
/// `ctxscribe_transcriber_free()`. Do not free it.
/// Thread safety: any thread, concurrently with other calls. Does not block.
///
/// # Safety
///
/// `transcriber` is NULL or a live transcriber.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcriber_backend(
    transcriber: *const ctxscribe_transcriber,
) -> *const c_char {
    // SAFETY: `transcriber` is NULL or live (contract).
    let transcriber = unsafe { transcriber.as_ref() };
    c_ptr(transcriber.map(|t| &t.backend))
}

/// Transcribes an encoded audio file (wav, webm, mp3, m4a or ogg; the container is
/// detected from the bytes) with the context of `request`.
///
/// Blocks the calling thread until the whole file is transcribed; the time grows with
/// the audio's duration and the model's size. Silence or noise gives an empty text, not
/// an error.
///
/// Errors: `CTXSCRIBE_STATUS_UNSUPPORTED_AUDIO_TYPE` (flac, text, empty input, ...),
/// `CTXSCRIBE_STATUS_AUDIO_DECODE_FAILED` (truncated or corrupt),
/// `CTXSCRIBE_STATUS_FILE_TOO_LARGE`, `CTXSCRIBE_STATUS_AUDIO_TOO_LONG`,
/// `CTXSCRIBE_STATUS_INVALID_REQUEST` (e.g. a language the model does not know),
/// `CTXSCRIBE_STATUS_TRANSCRIPTION_FAILED` (engine failure),
/// `CTXSCRIBE_STATUS_DEADLINE_EXCEEDED` (the configuration's timeout passed).
/// NULL rules: `transcriber`, `audio` and `out` must not be NULL
/// (`CTXSCRIBE_STATUS_NULL_ARGUMENT`, even when `audio_len` is 0); `request` may be NULL
/// for no context. `*out` is written on success only. `err_out` may be NULL; otherwise,
/// on failure only, `*err_out` receives an error object to free with
/// `ctxscribe_error_free()`.
/// Ownership: `audio` and `request` are only read during the call; the caller owns
/// `*out` and frees it with `ctxscribe_transcript_free()`.
/// Thread safety: any number of threads may call this at once with the same
/// `transcriber` (and the same `request`, if no thread changes it).
///
/// # Safety
///
/// `transcriber` is NULL or live; `request` is NULL or a live request nobody changes
/// meanwhile; `audio` is NULL or points to `audio_len` readable bytes; `out` and
/// `err_out` are NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcriber_transcribe(
    transcriber: *const ctxscribe_transcriber,
    request: *const ctxscribe_request,
    audio: *const u8,
    audio_len: usize,
    out: *mut *mut ctxscribe_transcript,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `audio` is NULL or points to `audio_len` readable bytes (contract).
    let audio = unsafe { ptr::try_slice(audio, audio_len, "audio") }.map(Input::Encoded);
    // SAFETY: this function's contract, and NULL options.
    unsafe { transcribe_call(transcriber, request, null(), audio, out, err_out) }
}

/// `ctxscribe_transcriber_transcribe()` as `options` say: a cancel token
/// (`CTXSCRIBE_STATUS_CANCELLED` once cancelled), a time limit
/// (`CTXSCRIBE_STATUS_DEADLINE_EXCEEDED`) and a callback for each finished segment,
/// called on this thread while the run works on the library's threads (a non-zero
/// return stops the run: `CTXSCRIBE_STATUS_CANCELLED`). When it returns, the run is over.
///
/// Errors, NULL rules, ownership, thread safety: as
/// `ctxscribe_transcriber_transcribe()`; `options` may be NULL (no options) and is only
/// read during the call.
///
/// # Safety
///
/// As `ctxscribe_transcriber_transcribe()`; `options` is NULL or live options nobody
/// changes meanwhile, whose callback (if any) is safe to call with its user data on this
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcriber_transcribe_with(
    transcriber: *const ctxscribe_transcriber,
    request: *const ctxscribe_request,
    options: *const ctxscribe_run_options,
    audio: *const u8,
    audio_len: usize,
    out: *mut *mut ctxscribe_transcript,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `audio` is NULL or points to `audio_len` readable bytes (contract).
    let audio = unsafe { ptr::try_slice(audio, audio_len, "audio") }.map(Input::Encoded);
    // SAFETY: this function's contract.
    unsafe { transcribe_call(transcriber, request, options, audio, out, err_out) }
}

/// Transcribes mono PCM: `n_samples` 32-bit float samples in [-1, 1] at `sample_rate`
/// Hz (16000 is what Whisper uses; other rates from 1000 to 384000 are resampled). Out of
/// range samples are clamped, NaN and infinities become 0.
///
/// Blocks the calling thread until the transcript is ready, like
/// `ctxscribe_transcriber_transcribe()`.
///
/// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"file"`) for a sample rate out of
/// range, `CTXSCRIBE_STATUS_AUDIO_TOO_LONG`, and the request and engine errors of
/// `ctxscribe_transcriber_transcribe()`.
/// NULL rules: `transcriber`, `samples` and `out` must not be NULL
/// (`CTXSCRIBE_STATUS_NULL_ARGUMENT`, even when `n_samples` is 0); `request` may be NULL
/// for no context. `*out` is written on success only. `err_out` may be NULL; otherwise,
/// on failure only, `*err_out` receives an error object to free with
/// `ctxscribe_error_free()`.
/// Ownership: `samples` and `request` are only read during the call; the caller owns
/// `*out` and frees it with `ctxscribe_transcript_free()`.
/// Thread safety: as `ctxscribe_transcriber_transcribe()`.
///
/// # Safety
///
/// `transcriber` is NULL or live; `request` is NULL or a live request nobody changes
/// meanwhile; `samples` is NULL or points to `n_samples` readable, aligned floats; `out`
/// and `err_out` are NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcriber_transcribe_pcm(
    transcriber: *const ctxscribe_transcriber,
    request: *const ctxscribe_request,
    samples: *const f32,
    n_samples: usize,
    sample_rate: u32,
    out: *mut *mut ctxscribe_transcript,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `samples` is NULL or points to `n_samples` aligned floats (contract).
    let samples = unsafe { ptr::try_slice(samples, n_samples, "samples") };
    let audio = samples.map(|samples| Input::Pcm {
        samples,
        sample_rate,
    });
    // SAFETY: this function's contract, and NULL options.
    unsafe { transcribe_call(transcriber, request, null(), audio, out, err_out) }
}

/// `ctxscribe_transcriber_transcribe_pcm()` as `options` say (see
/// `ctxscribe_transcriber_transcribe_with()`).
///
/// # Safety
///
/// As `ctxscribe_transcriber_transcribe_pcm()`; `options` as in
/// `ctxscribe_transcriber_transcribe_with()`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The C call's arguments, as the PCM call has them.
pub unsafe extern "C" fn ctxscribe_transcriber_transcribe_pcm_with(
    transcriber: *const ctxscribe_transcriber,
    request: *const ctxscribe_request,
    options: *const ctxscribe_run_options,
    samples: *const f32,
    n_samples: usize,
    sample_rate: u32,
    out: *mut *mut ctxscribe_transcript,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    // SAFETY: `samples` is NULL or points to `n_samples` aligned floats (contract).
    let samples = unsafe { ptr::try_slice(samples, n_samples, "samples") };
    let audio = samples.map(|samples| Input::Pcm {
        samples,
        sample_rate,
    });
    // SAFETY: this function's contract.
    unsafe { transcribe_call(transcriber, request, options, audio, out, err_out) }
}

/// The validated context of `request`; no context for NULL.
///
/// # Safety
///
/// `request` is NULL or a live request that nobody changes during the call.
unsafe fn context_of(request: *const ctxscribe_request) -> Result<Context, Failure> {
    // SAFETY: NULL or live and unchanged, by this function's contract.
    match unsafe { request.as_ref() } {
        Some(request) => request.context(),
        None => ctxscribe_request::default().context(),
    }
}

/// The caller's audio, borrowed until it is copied.
enum Input<'a> {
    Encoded(&'a [u8]),
    Pcm {
        samples: &'a [f32],
        sample_rate: u32,
    },
}

impl Input<'_> {
    /// An owned copy. Encoded audio over the size limit fails before it is copied (the
    /// library checks the size too; checking first avoids copying a huge input).
    fn to_audio(&self, limits: &AudioLimits) -> Result<Audio, Failure> {
        match *self {
            Input::Encoded(bytes) => {
                let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
                if size > limits.max_file_bytes {
                    let limit = limits.max_file_bytes;
                    return Err(ctxscribe::Error::FileTooLarge { size, limit }.into());
                }
                Ok(Audio::Encoded(bytes.to_vec()))
            }
            Input::Pcm {
                samples,
                sample_rate,
            } => Ok(Audio::Pcm {
                samples: samples.to_vec(),
                sample_rate,
            }),
        }
    }
}

/// The body of the transcribe calls: the arguments are checked for NULL in their order
/// (`audio` is the audio argument's check), the audio is copied and transcribed with the
/// context of `request`, and the transcript goes to `*out`.
///
/// # Safety
///
/// `transcriber` is NULL or live; `request` is NULL or a live request nobody changes
/// meanwhile; `options` is NULL or live options nobody changes meanwhile, whose callback
/// (if any) is safe to call with its user data on this thread; `out` and `err_out` are
/// NULL or valid for writing one pointer.
unsafe fn transcribe_call<'a>(
    transcriber: *const ctxscribe_transcriber,
    request: *const ctxscribe_request,
    options: *const ctxscribe_run_options,
    audio: Result<Input<'a>, NullArgument>,
    out: *mut *mut ctxscribe_transcript,
    err_out: *mut *mut ctxscribe_error,
) -> ctxscribe_status {
    let body = || {
        // SAFETY: `transcriber` is NULL or live (contract).
        let transcriber = unsafe { ptr::try_ref(transcriber, "transcriber") }?;
        let input = audio?;
        let out = ptr::out_slot(out, "out")?;
        // SAFETY: `request` is NULL or live and unchanged meanwhile (contract).
        let context = unsafe { context_of(request) }?;
        let audio = input.to_audio(transcriber.inner.audio_limits())?;
        // The context is checked already: the request takes it as is.
        let audio = CheckedAudio::new(audio, transcriber.inner.audio_limits())?;
        let request = TranscriptionRequest::new(
            audio,
            context.messages,
            context.languages,
            context.dictionary,
        );
        // SAFETY: `options` is NULL or live and unchanged, its callback safe here (contract).
        let options = unsafe { options.as_ref() };
        // SAFETY: as just said.
        let transcript = unsafe { run::run(&transcriber.inner, request, options) }?;
        // SAFETY: `out` is valid for writing one pointer (contract; checked not NULL).
        unsafe { ptr::write_out(out, ctxscribe_transcript::new(&transcript)) };
        Ok(())
    };
    // SAFETY: `err_out` is NULL or valid for writing one pointer (this function's contract).
    unsafe { guard(err_out, body) }
}
