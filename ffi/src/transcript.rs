//! `ctxscribe_transcript`: the result of one transcription.

use std::ffi::{CString, c_char};
use std::ptr::null;

use ctxscribe::Transcript;

use crate::error::{c_ptr, c_string, read_or};
use crate::ptr;

/// The result of one transcription: the text, its timed segments, the language and
/// durations.
///
/// Created by a successful `ctxscribe_transcriber_transcribe()` or
/// `ctxscribe_transcriber_transcribe_pcm()`, freed by `ctxscribe_transcript_free()`.
/// Immutable: it may be read from any thread.
#[derive(Debug)]
pub struct ctxscribe_transcript {
    text: CString,
    language_code: Option<CString>,
    audio_secs: f64,
    processing_secs: f64,
    segments: Vec<Segment>,
    warnings: Vec<Warning>,
}

/// One warning, its code and message as C strings.
#[derive(Debug)]
struct Warning {
    code: CString,
    message: CString,
}

/// One timed segment, its text as a C string.
#[derive(Debug)]
struct Segment {
    start: f64,
    end: f64,
    text: CString,
}

impl ctxscribe_transcript {
    pub(crate) fn new(transcript: &Transcript) -> Self {
        ctxscribe_transcript {
            text: c_string(&transcript.text),
            language_code: transcript.language.map(|l| c_string(l.code())),
            audio_secs: transcript.audio_secs,
            processing_secs: transcript.timings.total.as_secs_f64(),
            segments: transcript
                .segments
                .iter()
                .map(|s| Segment {
                    start: s.start,
                    end: s.end,
                    text: c_string(&s.text),
                })
                .collect(),
            warnings: transcript
                .warnings
                .iter()
                .map(|w| Warning {
                    code: c_string(w.code.as_str()),
                    message: c_string(&w.message),
                })
                .collect(),
        }
    }

    fn segment(&self, index: usize) -> Option<&Segment> {
        self.segments.get(index)
    }

    fn warning(&self, index: usize) -> Option<&Warning> {
        self.warnings.get(index)
    }
}

/// Returns the transcript text: UTF-8, NUL-terminated, whitespace-normalised; empty
/// (`""`, never NULL) when the audio holds no speech.
///
/// NULL rules: returns NULL if `transcript` is NULL.
/// Ownership: borrowed from `transcript`, valid until `ctxscribe_transcript_free()`.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a live transcript.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_text(
    transcript: *const ctxscribe_transcript,
) -> *const c_char {
    // SAFETY: `transcript` is NULL or live (contract).
    unsafe { read_or(transcript, null(), |t| t.text.as_ptr()) }
}

/// Returns the Whisper code of the language the audio was transcribed in (`"en"`,
/// `"de"`, ...).
///
/// NULL rules: returns NULL if `transcript` is NULL or the audio held no speech.
/// Ownership: borrowed from `transcript`, valid until `ctxscribe_transcript_free()`.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a live transcript.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_language(
    transcript: *const ctxscribe_transcript,
) -> *const c_char {
    // SAFETY: `transcript` is NULL or live (contract).
    unsafe { read_or(transcript, null(), |t| c_ptr(t.language_code.as_ref())) }
}

/// Returns the duration of the input audio in seconds.
///
/// NULL rules: returns 0.0 if `transcript` is NULL.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a live transcript.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_audio_secs(
    transcript: *const ctxscribe_transcript,
) -> f64 {
    // SAFETY: `transcript` is NULL or live (contract).
    unsafe { read_or(transcript, 0.0, |t| t.audio_secs) }
}

/// Returns the wall-clock time the transcription took, in seconds (decoding the audio
/// and running the engine).
///
/// NULL rules: returns 0.0 if `transcript` is NULL.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a live transcript.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_processing_secs(
    transcript: *const ctxscribe_transcript,
) -> f64 {
    // SAFETY: `transcript` is NULL or live (contract).
    unsafe { read_or(transcript, 0.0, |t| t.processing_secs) }
}

/// Returns the number of timed segments of the transcript (0 when the audio holds no
/// speech). Segments are in order and their times never go back; their texts joined by
/// spaces are `ctxscribe_transcript_text()`.
///
/// NULL rules: returns 0 if `transcript` is NULL.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a live transcript.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_segment_count(
    transcript: *const ctxscribe_transcript,
) -> usize {
    // SAFETY: `transcript` is NULL or live (contract).
    unsafe { read_or(transcript, 0, |t| t.segments.len()) }
}

/// Returns where segment `index` (0 to `ctxscribe_transcript_segment_count() - 1`)
/// starts, in seconds from the start of the audio.
///
/// NULL rules: returns -1.0 if `transcript` is NULL or `index` is out of range.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a live transcript.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_segment_start(
    transcript: *const ctxscribe_transcript,
    index: usize,
) -> f64 {
    // SAFETY: `transcript` is NULL or live (contract).
    unsafe {
        read_or(transcript, -1.0, |t| {
            t.segment(index).map_or(-1.0, |s| s.start)
        })
    }
}

/// Returns where segment `index` (0 to `ctxscribe_transcript_segment_count() - 1`) ends,
/// in seconds from the start of the audio; never before its start.
///
/// NULL rules: returns -1.0 if `transcript` is NULL or `index` is out of range.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a live transcript.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_segment_end(
    transcript: *const ctxscribe_transcript,
    index: usize,
) -> f64 {
    // SAFETY: `transcript` is NULL or live (contract).
    unsafe {
        read_or(transcript, -1.0, |t| {
            t.segment(index).map_or(-1.0, |s| s.end)
        })
    }
}

/// Returns the text of segment `index` (0 to `ctxscribe_transcript_segment_count() - 1`):
/// UTF-8, NUL-terminated, without leading or trailing whitespace.
///
/// NULL rules: returns NULL if `transcript` is NULL or `index` is out of range.
/// Ownership: borrowed from `transcript`, valid until `ctxscribe_transcript_free()`.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a live transcript.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_segment_text(
    transcript: *const ctxscribe_transcript,
    index: usize,
) -> *const c_char {
    // SAFETY: `transcript` is NULL or live (contract).
    unsafe {
        read_or(transcript, null(), |t| {
            c_ptr(t.segment(index).map(|s| &s.text))
        })
    }
}

/// Returns the number of warnings of a successful transcription: things the caller
/// should know although it succeeded, e.g. `audio_truncated` (the file was cut short;
/// the audio before the cut is transcribed). 0 for most transcripts.
///
/// NULL rules: returns 0 if `transcript` is NULL.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a live transcript.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_warning_count(
    transcript: *const ctxscribe_transcript,
) -> usize {
    // SAFETY: `transcript` is NULL or live (contract).
    unsafe { read_or(transcript, 0, |t| t.warnings.len()) }
}

/// Returns the code of warning `index` (`"audio_truncated"`): stable, ASCII.
///
/// NULL rules: returns NULL if `transcript` is NULL or `index` is not below
/// `ctxscribe_transcript_warning_count()`.
/// Ownership: borrowed from `transcript`, valid until `ctxscribe_transcript_free()`.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a live transcript.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_warning_code(
    transcript: *const ctxscribe_transcript,
    index: usize,
) -> *const c_char {
    // SAFETY: `transcript` is NULL or live (contract).
    unsafe {
        read_or(transcript, null(), |t| {
            c_ptr(t.warning(index).map(|w| &w.code))
        })
    }
}

/// Returns the message of warning `index`: a UTF-8 sentence saying where and how much.
///
/// NULL rules: returns NULL if `transcript` is NULL or `index` is not below
/// `ctxscribe_transcript_warning_count()`.
/// Ownership: borrowed from `transcript`, valid until `ctxscribe_transcript_free()`.
/// Thread safety: any thread. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a live transcript.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_warning_message(
    transcript: *const ctxscribe_transcript,
    index: usize,
) -> *const c_char {
    // SAFETY: `transcript` is NULL or live (contract).
    unsafe {
        read_or(transcript, null(), |t| {
            c_ptr(t.warning(index).map(|w| &w.message))
        })
    }
}

/// Frees a transcript and the strings borrowed from it.
///
/// NULL rules: `ctxscribe_transcript_free(NULL)` does nothing.
/// Thread safety: once no other thread uses `transcript`. Does not block.
///
/// # Safety
///
/// `transcript` is NULL or a transcript from this library not freed yet; it must not be
/// used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ctxscribe_transcript_free(transcript: *mut ctxscribe_transcript) {
    // SAFETY: NULL or owned by the caller and never used again (contract).
    unsafe { ptr::free(transcript) }
}
