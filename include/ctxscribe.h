/*
 * ctxscribe: context-aware speech-to-text on an embedded Whisper engine (C API).
 *
 * Link with -lctxscribe_ffi (see README.md, "C quickstart"). Conventions:
 *  - Opaque handles: ctxscribe_config, ctxscribe_request, ctxscribe_transcriber,
 *    ctxscribe_transcript, ctxscribe_error. Each has a _free function; _free(NULL) is a
 *    no-op.
 *  - Fallible functions return a ctxscribe_status (CTXSCRIBE_STATUS_OK = 0) and write
 *    their outputs only on success. Their last parameter, err_out, may be NULL; when it
 *    is not, a failure stores a ctxscribe_error in *err_out (free it with
 *    ctxscribe_error_free). Initialise it to NULL. There is no thread-local last error.
 *  - Strings are NUL-terminated UTF-8. Strings returned by the library are borrowed
 *    from the object they come from (or static) and must not be freed.
 *  - A panic inside the library never unwinds into C: it becomes
 *    CTXSCRIBE_STATUS_PANIC.
 *  - A ctxscribe_transcriber may be shared by any number of threads; configs and
 *    requests must not be changed while another thread uses them; transcripts and
 *    errors are immutable.
 */

#ifndef CTXSCRIBE_H
#define CTXSCRIBE_H

/* Generated with cbindgen:0.29.4 */

/*
 * Generated from ffi/src by cbindgen (version pinned in ffi/scripts/gen-header.sh) with
 * ffi/cbindgen.toml. Do not edit: run `bash ffi/scripts/gen-header.sh` instead.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The most beams whisper.cpp decodes with (`WHISPER_MAX_DECODERS`).
#define CTXSCRIBE_MAX_BEAM_SIZE 8

// The most engine threads per transcription (ggml's `GGML_MAX_N_THREADS`).
#define CTXSCRIBE_MAX_THREADS 512

// The outcome of a fallible call.
//
// Values are explicit and stable: a value is never reused for another meaning. Values
// 1 to 99 are the library's contract codes (the same codes the HTTP server and the
// Python package report, see `ctxscribe_status_code()`); values from 100 on are about
// the C call itself.
enum ctxscribe_status
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    // Success: the outputs were written.
    CTXSCRIBE_STATUS_OK = 0,
    // `invalid_request`: a message, language, dictionary term or option is malformed or
    // over a documented limit (also: a string argument that is not valid UTF-8).
    CTXSCRIBE_STATUS_INVALID_REQUEST = 1,
    // `unsupported_audio_type`: the bytes are not wav, webm, mp3, m4a or ogg (flac,
    // aiff, text, empty input, ...).
    CTXSCRIBE_STATUS_UNSUPPORTED_AUDIO_TYPE = 2,
    // `audio_decode_failed`: a supported container whose content cannot be decoded
    // (truncated, corrupt).
    CTXSCRIBE_STATUS_AUDIO_DECODE_FAILED = 3,
    // `file_too_large`: the encoded audio is over the configured size limit.
    CTXSCRIBE_STATUS_FILE_TOO_LARGE = 4,
    // `audio_too_long`: the audio is over the configured duration limit.
    CTXSCRIBE_STATUS_AUDIO_TOO_LONG = 5,
    // `model_unavailable`: the model (or VAD model) is missing or cannot be loaded.
    CTXSCRIBE_STATUS_MODEL_UNAVAILABLE = 6,
    // `transcription_failed`: the engine or a remote provider failed on valid audio.
    CTXSCRIBE_STATUS_TRANSCRIPTION_FAILED = 7,
    // `cancelled`: the run was cancelled through its `ctxscribe_cancel_token`, or its
    // segment callback asked it to stop.
    CTXSCRIBE_STATUS_CANCELLED = 8,
    // `deadline_exceeded`: the run did not finish within its time limit (the
    // configuration's `timeout_secs`, or the run options').
    CTXSCRIBE_STATUS_DEADLINE_EXCEEDED = 9,
    // `null_argument`: a pointer argument that must not be NULL was NULL.
    CTXSCRIBE_STATUS_NULL_ARGUMENT = 100,
    // `panic`: a bug in ctxscribe was caught at the boundary; the call failed.
    CTXSCRIBE_STATUS_PANIC = 101,
    // `unknown_error`: a library error this version of the C ABI has no status for;
    // `ctxscribe_error_code()` names it.
    CTXSCRIBE_STATUS_UNKNOWN_ERROR = 102,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum ctxscribe_status ctxscribe_status;
#else
typedef uint32_t ctxscribe_status;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// Who wrote a context message: the values of the `role` argument of
// `ctxscribe_request_add_message()`.
enum ctxscribe_role
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
    // Instructions or background for the transcription (`"system"`).
    CTXSCRIBE_ROLE_SYSTEM = 0,
    // Text from the user, such as earlier turns of the conversation (`"user"`).
    CTXSCRIBE_ROLE_USER = 1,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum ctxscribe_role ctxscribe_role;
#else
typedef uint32_t ctxscribe_role;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// A cancel token: `ctxscribe_cancel_token_cancel()` from any thread stops every call
// that holds it with `CTXSCRIBE_STATUS_CANCELLED`, within a decoding step (milliseconds).
//
// Created by `ctxscribe_cancel_token_new()`, freed by `ctxscribe_cancel_token_free()`.
// Run options keep their own reference: the token may be freed while a call that holds
// it runs.
typedef struct ctxscribe_cancel_token ctxscribe_cancel_token;

// Settings for `ctxscribe_transcriber_new()`; every setting has a default.
//
// Created by `ctxscribe_config_new()`, freed by `ctxscribe_config_free()`. A config may
// be reused for several transcribers. Not synchronised: do not change it while another
// thread uses it.
typedef struct ctxscribe_config ctxscribe_config;

// Why a call failed: a status, a code string, the request field concerned and a
// message for humans.
//
// Created by a failing call when the caller passed a non-NULL `err_out`; owned by the
// caller, who frees it with `ctxscribe_error_free()`. Immutable: it may be read from
// any thread.
typedef struct ctxscribe_error ctxscribe_error;

// The context of one transcription: chat-style messages, the allowed languages and
// dictionary terms. An empty request means no context and automatic language
// detection.
//
// Created by `ctxscribe_request_new()`, freed by `ctxscribe_request_free()`. A request
// may be reused for any number of transcriptions, also concurrently from several
// threads, as long as no thread changes it meanwhile (adding to it is not
// synchronised).
typedef struct ctxscribe_request ctxscribe_request;

// How one call runs: a cancel token, a time limit and a segment callback, each
// optional. Created by `ctxscribe_run_options_new()`, freed by
// `ctxscribe_run_options_free()`; pass it to `ctxscribe_transcriber_transcribe_with()`
// or `ctxscribe_transcriber_transcribe_pcm_with()`.
typedef struct ctxscribe_run_options ctxscribe_run_options;

// A loaded Whisper model that transcribes audio with context.
//
// Created by `ctxscribe_transcriber_new()`, freed by `ctxscribe_transcriber_free()`.
// Thread-safe: one transcriber may be used by any number of threads at once; each call
// has its own decoder state and uses the configured number of engine threads.
typedef struct ctxscribe_transcriber ctxscribe_transcriber;

// The result of one transcription: the text, its timed segments, the language and
// durations.
//
// Created by a successful `ctxscribe_transcriber_transcribe()` or
// `ctxscribe_transcriber_transcribe_pcm()`, freed by `ctxscribe_transcript_free()`.
// Immutable: it may be read from any thread.
typedef struct ctxscribe_transcript ctxscribe_transcript;

// Called on the calling thread for each timed segment of a finished window: `start` and
// `end` in seconds of the input, `text` its UTF-8 text (valid only during the call),
// and the `user_data` given with it. Return 0 to go on; any other value stops the run,
// which then fails with `CTXSCRIBE_STATUS_CANCELLED`.
typedef int32_t (*ctxscribe_segment_callback)(double start,
                                              double end,
                                              const char *text,
                                              void *user_data);

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// Returns the version of the ctxscribe library, e.g. `"0.1.0"`; never NULL.
//
// Ownership: the string is static; never free it. Thread safety: any thread.
// Does not block.
const char *ctxscribe_version(void);

// Creates a config with every default: the installed multilingual base model (or
// `$CTXSCRIBE_MODEL`), the Silero VAD model next to it, all cores (or
// `$CTXSCRIBE_THREADS`), greedy decoding, a 25 MiB upload limit, one hour of audio,
// no timeout.
//
// Ownership: the caller owns the result and frees it with `ctxscribe_config_free()`.
// Returns NULL only if the library failed internally (a caught panic).
// Thread safety: any thread. Does not block.
ctxscribe_config *ctxscribe_config_new(void);

// Frees a config. Transcribers created from it are not affected.
//
// NULL rules: `ctxscribe_config_free(NULL)` does nothing.
// Thread safety: once no other thread uses `config`. Does not block.
//
// # Safety
//
// `config` is NULL or a config from `ctxscribe_config_new()` not freed yet; it must not
// be used afterwards.
void ctxscribe_config_free(ctxscribe_config *config);

// Sets the whisper.cpp ggml/gguf model file (e.g. `models/ggml-tiny.en.bin`, or an
// official `ggml-large-v3-turbo.bin`). The path is checked when the transcriber is
// created (`CTXSCRIBE_STATUS_MODEL_UNAVAILABLE` then).
//
// NULL rules: `config` must not be NULL (`CTXSCRIBE_STATUS_NULL_ARGUMENT`); `path` may
// be NULL to go back to the default model. `err_out` may be NULL; otherwise, on
// failure only, `*err_out` receives an error object the caller frees with
// `ctxscribe_error_free()`.
// Ownership: `path` is copied; the caller keeps it.
// Thread safety: not while another thread uses `config`. Does not block.
//
// # Safety
//
// `config` is NULL or a live config; `path` is NULL or a NUL-terminated string;
// `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_config_set_model_path(ctxscribe_config *config,
                                                 const char *path,
                                                 ctxscribe_error **err_out);

// Sets the Silero VAD model file (whisper.cpp ggml format) used to skip silence and
// noise. The default is `$CTXSCRIBE_VAD_MODEL`, else `silero-v6.2.0-ggml.bin` next to
// the model; without a VAD model the whole signal is decoded.
//
// NULL rules: `config` must not be NULL; `path` may be NULL to go back to the default
// (this also undoes `ctxscribe_config_disable_vad()`). `err_out` may be NULL;
// otherwise, on failure only, `*err_out` receives an error object to free with
// `ctxscribe_error_free()`.
// Ownership: `path` is copied; the caller keeps it.
// Thread safety: not while another thread uses `config`. Does not block.
//
// # Safety
//
// `config` is NULL or a live config; `path` is NULL or a NUL-terminated string;
// `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_config_set_vad_model_path(ctxscribe_config *config,
                                                     const char *path,
                                                     ctxscribe_error **err_out);

// Turns voice activity detection off: the whole signal is decoded, only digital
// silence is skipped.
//
// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
// Thread safety: not while another thread uses `config`. Does not block.
//
// # Safety
//
// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
// pointer.
ctxscribe_status ctxscribe_config_disable_vad(ctxscribe_config *config, ctxscribe_error **err_out);

// Sets the number of engine threads each transcription uses; 0 means the default
// (`$CTXSCRIBE_THREADS`, else all cores). Several concurrent transcriptions each use
// this many threads.
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"threads"`) above
// `CTXSCRIBE_MAX_THREADS` (512).
// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
// Thread safety: not while another thread uses `config`. Does not block.
//
// # Safety
//
// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
// pointer.
ctxscribe_status ctxscribe_config_set_threads(ctxscribe_config *config,
                                              uint32_t threads,
                                              ctxscribe_error **err_out);

// Chooses the decoder search: 0 for greedy decoding (the default, fastest), 1 to
// `CTXSCRIBE_MAX_BEAM_SIZE` (8) for beam search with that many beams.
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"beam_size"`) above 8.
// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
// Thread safety: not while another thread uses `config`. Does not block.
//
// # Safety
//
// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
// pointer.
ctxscribe_status ctxscribe_config_set_beam_size(ctxscribe_config *config,
                                                uint32_t beam_size,
                                                ctxscribe_error **err_out);

// Sets the largest accepted encoded audio, in bytes; 0 means the default (25 MiB).
// Larger inputs fail with `CTXSCRIBE_STATUS_FILE_TOO_LARGE` before being copied.
//
// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
// Thread safety: not while another thread uses `config`. Does not block.
//
// # Safety
//
// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
// pointer.
ctxscribe_status ctxscribe_config_set_max_file_bytes(ctxscribe_config *config,
                                                     uint64_t max_bytes,
                                                     ctxscribe_error **err_out);

// Sets the longest accepted audio, in seconds; 0 means the default (3600 s). Longer
// audio fails with `CTXSCRIBE_STATUS_AUDIO_TOO_LONG`.
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"max_duration_secs"`) for a
// negative, infinite or NaN value.
// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
// Thread safety: not while another thread uses `config`. Does not block.
//
// # Safety
//
// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
// pointer.
ctxscribe_status ctxscribe_config_set_max_duration_secs(ctxscribe_config *config,
                                                        double max_secs,
                                                        ctxscribe_error **err_out);

// Gives up on a transcription after this many milliseconds, failing with
// `CTXSCRIBE_STATUS_DEADLINE_EXCEEDED`; 0 means no timeout (the default).
//
// NULL rules: `config` must not be NULL. `err_out` may be NULL; otherwise, on failure
// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
// Thread safety: not while another thread uses `config`. Does not block.
//
// # Safety
//
// `config` is NULL or a live config; `err_out` is NULL or valid for writing one
// pointer.
ctxscribe_status ctxscribe_config_set_timeout_ms(ctxscribe_config *config,
                                                 uint64_t timeout_ms,
                                                 ctxscribe_error **err_out);

// Returns the code string of a status value: `"ok"`, one of the library's contract
// codes (`"invalid_request"`, `"unsupported_audio_type"`, `"audio_decode_failed"`,
// `"file_too_large"`, `"audio_too_long"`, `"model_unavailable"`,
// `"transcription_failed"`), or `"null_argument"`, `"panic"`, `"unknown_error"`.
//
// Returns NULL if `status` is not a `ctxscribe_status` value.
//
// Ownership: the string is static; never free it. Thread safety: any thread.
// Does not block.
const char *ctxscribe_status_code(uint32_t status);

// Returns the status of an error object: never `CTXSCRIBE_STATUS_OK` for a real error.
//
// NULL rules: `error` may be NULL (no error), which gives `CTXSCRIBE_STATUS_OK`.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `error` is NULL or a live error object from this library.
ctxscribe_status ctxscribe_error_status(const ctxscribe_error *error);

// Returns the code of an error object: one of the strings of `ctxscribe_status_code()`,
// or, with `CTXSCRIBE_STATUS_UNKNOWN_ERROR`, the library's newer code.
//
// NULL rules: returns NULL if `error` is NULL.
// Ownership: borrowed from `error`, valid until `ctxscribe_error_free(error)`.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `error` is NULL or a live error object from this library.
const char *ctxscribe_error_code(const ctxscribe_error *error);

// Returns the message of an error object: UTF-8 for humans, saying what is wrong and
// where (`invalid languages: languages[1]: unknown language "xx" ...`). Its wording may
// change between versions; branch on the status, not on the message.
//
// NULL rules: returns NULL if `error` is NULL.
// Ownership: borrowed from `error`, valid until `ctxscribe_error_free(error)`.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `error` is NULL or a live error object from this library.
const char *ctxscribe_error_message(const ctxscribe_error *error);

// Returns what the error is about: the request field (`"messages"`, `"languages"`,
// `"dictionary"`, `"file"`, or an option name such as `"beam_size"`), or, with
// `CTXSCRIBE_STATUS_NULL_ARGUMENT`, the name of the NULL argument.
//
// NULL rules: returns NULL if `error` is NULL or the error concerns no field (e.g.
// `CTXSCRIBE_STATUS_MODEL_UNAVAILABLE`).
// Ownership: borrowed from `error`, valid until `ctxscribe_error_free(error)`.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `error` is NULL or a live error object from this library.
const char *ctxscribe_error_param(const ctxscribe_error *error);

// Frees an error object and the strings borrowed from it.
//
// NULL rules: `ctxscribe_error_free(NULL)` does nothing.
// Thread safety: any thread, once no other thread uses `error`. Does not block.
//
// # Safety
//
// `error` is NULL or an error object from this library not freed yet; it must not be
// used afterwards.
void ctxscribe_error_free(ctxscribe_error *error);

// Creates an empty request: no messages, automatic language detection, no dictionary.
//
// Ownership: the caller owns the result and frees it with `ctxscribe_request_free()`.
// Returns NULL only if the library failed internally (a caught panic).
// Thread safety: any thread. Does not block.
ctxscribe_request *ctxscribe_request_new(void);

// Frees a request. Transcripts made with it are not affected.
//
// NULL rules: `ctxscribe_request_free(NULL)` does nothing.
// Thread safety: once no other thread uses `request`. Does not block.
//
// # Safety
//
// `request` is NULL or a request from `ctxscribe_request_new()` not freed yet; it must
// not be used afterwards.
void ctxscribe_request_free(ctxscribe_request *request);

// Adds a context message. `role` is a `ctxscribe_role` value
// (`CTXSCRIBE_ROLE_SYSTEM` or `CTXSCRIBE_ROLE_USER`); `content` is UTF-8, kept
// verbatim (not trimmed; empty is allowed).
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"messages"`) for another `role`
// value, content that is not UTF-8, or a limit passed: 100 messages, 16 KiB per
// message, 64 KiB in all. On failure the request is unchanged.
// NULL rules: `request` and `content` must not be NULL
// (`CTXSCRIBE_STATUS_NULL_ARGUMENT`). `err_out` may be NULL; otherwise, on failure
// only, `*err_out` receives an error object to free with `ctxscribe_error_free()`.
// Ownership: `content` is copied; the caller keeps it.
// Thread safety: not while another thread uses `request`. Does not block.
//
// # Safety
//
// `request` is NULL or a live request; `content` is NULL or a NUL-terminated string;
// `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_request_add_message(ctxscribe_request *request,
                                               uint32_t role,
                                               const char *content,
                                               ctxscribe_error **err_out);

// Allows one more language: a Whisper code (`"de"`) or English name (`"german"`),
// case-insensitive. With no language added, the language is detected among all of
// Whisper's; with one, the audio is transcribed in it; with several, detection is
// limited to them. Duplicates are ignored.
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"languages"`) for an unknown
// language (`"xx"`, `"en-US"`), `"auto"` (add nothing instead), an empty string or
// text that is not UTF-8. On failure the request is unchanged. A language the model
// does not know (any but English on an English-only model) fails later, in
// `ctxscribe_transcriber_transcribe()`.
// NULL rules: `request` and `code` must not be NULL. `err_out` may be NULL; otherwise,
// on failure only, `*err_out` receives an error object to free with
// `ctxscribe_error_free()`.
// Ownership: `code` is copied; the caller keeps it.
// Thread safety: not while another thread uses `request`. Does not block.
//
// # Safety
//
// `request` is NULL or a live request; `code` is NULL or a NUL-terminated string;
// `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_request_add_language(ctxscribe_request *request,
                                                const char *code,
                                                ctxscribe_error **err_out);

// Adds a dictionary term: a name or word the transcript should spell exactly
// (`"kubectl"`, `"Dr. Müller"`). It is trimmed; an empty term is ignored; a duplicate
// (case-sensitive) is ignored.
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"dictionary"`) for a term with a
// control character, over 100 characters, more than 1000 distinct terms, or text that
// is not UTF-8. On failure the request is unchanged.
// NULL rules: `request` and `term` must not be NULL. `err_out` may be NULL; otherwise,
// on failure only, `*err_out` receives an error object to free with
// `ctxscribe_error_free()`.
// Ownership: `term` is copied; the caller keeps it.
// Thread safety: not while another thread uses `request`. Does not block.
//
// # Safety
//
// `request` is NULL or a live request; `term` is NULL or a NUL-terminated string;
// `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_request_add_dictionary_term(ctxscribe_request *request,
                                                       const char *term,
                                                       ctxscribe_error **err_out);

// Replaces the messages with the `messages` field as sent on the wire: a JSON array of
// `{"role": "system"|"user", "content": ...}` objects (`content` a string or OpenAI's
// text parts); empty text or `null` means no messages. Same rules as the HTTP server.
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"messages"`) for malformed JSON,
// another role, a limit passed, or text that is not UTF-8. On failure the request is
// unchanged.
// NULL rules: `request` and `json` must not be NULL. `err_out` may be NULL; otherwise,
// on failure only, `*err_out` receives an error object to free with
// `ctxscribe_error_free()`.
// Ownership: `json` is copied; the caller keeps it.
// Thread safety: not while another thread uses `request`. Does not block.
//
// # Safety
//
// `request` is NULL or a live request; `json` is NULL or a NUL-terminated string;
// `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_request_set_messages_json(ctxscribe_request *request,
                                                     const char *json,
                                                     ctxscribe_error **err_out);

// Replaces the languages with the `languages` field as sent on the wire: `auto` (or
// empty), a code or English name (`de`, `german`), a comma list (`de,en`) or a JSON
// array (`["de","en"]`). Same rules as the HTTP server.
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"languages"`) for an unknown
// language, an empty list, a list containing `auto`, or text that is not UTF-8. On
// failure the request is unchanged.
// NULL rules: `request` and `text` must not be NULL. `err_out` may be NULL; otherwise,
// on failure only, `*err_out` receives an error object to free with
// `ctxscribe_error_free()`.
// Ownership: `text` is copied; the caller keeps it.
// Thread safety: not while another thread uses `request`. Does not block.
//
// # Safety
//
// `request` is NULL or a live request; `text` is NULL or a NUL-terminated string;
// `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_request_set_languages(ctxscribe_request *request,
                                                 const char *text,
                                                 ctxscribe_error **err_out);

// Replaces the dictionary with the `dictionary` field as sent on the wire: a comma list
// (`kubectl, Dr. Müller`) or a JSON array of strings; empty text means no terms. Same
// rules as the HTTP server.
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"dictionary"`) for malformed
// JSON, a term with a control character or over 100 characters, more than 1000 terms,
// or text that is not UTF-8. On failure the request is unchanged.
// NULL rules: `request` and `text` must not be NULL. `err_out` may be NULL; otherwise,
// on failure only, `*err_out` receives an error object to free with
// `ctxscribe_error_free()`.
// Ownership: `text` is copied; the caller keeps it.
// Thread safety: not while another thread uses `request`. Does not block.
//
// # Safety
//
// `request` is NULL or a live request; `text` is NULL or a NUL-terminated string;
// `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_request_set_dictionary(ctxscribe_request *request,
                                                  const char *text,
                                                  ctxscribe_error **err_out);

// Adds a spoken form of a dictionary term: how the term is said when that is not how
// it is spelled (`"Nguyen"`, `"win"`). The form is matched in the transcript like the
// forms derived from the term's spelling; the term is still written only where one of
// its forms was heard. Same rules as the HTTP server's `sounds_like` field.
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"sounds_like"`) when `term` is
// not a dictionary term of the request (add the term first), for a form that is empty
// or over 100 characters or has a character other than letters, spaces, apostrophes
// and hyphens, for more than 10 distinct forms of one term, or text that is not UTF-8.
// On failure the request is unchanged. A later dictionary that drops the term fails
// in `ctxscribe_transcriber_transcribe()`.
// NULL rules: `request`, `term` and `form` must not be NULL. `err_out` may be NULL;
// otherwise, on failure only, `*err_out` receives an error object to free with
// `ctxscribe_error_free()`.
// Ownership: `term` and `form` are copied; the caller keeps them.
// Thread safety: not while another thread uses `request`. Does not block.
//
// # Safety
//
// `request` is NULL or a live request; `term` and `form` are NULL or NUL-terminated
// strings; `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_request_add_sounds_like(ctxscribe_request *request,
                                                   const char *term,
                                                   const char *form,
                                                   ctxscribe_error **err_out);

// Replaces the spoken forms with the `sounds_like` field as sent on the wire: a JSON
// object of dictionary term -> array of spoken forms (`{"Nguyen": ["win"]}`); empty
// text or `null` means none. Same rules as the HTTP server.
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"sounds_like"`) for malformed
// JSON, another shape, a key that is not a dictionary term of the request (set the
// dictionary first), a form as `ctxscribe_request_add_sounds_like()` rejects, or text
// that is not UTF-8. On failure the request is unchanged.
// NULL rules: `request` and `json` must not be NULL. `err_out` may be NULL; otherwise,
// on failure only, `*err_out` receives an error object to free with
// `ctxscribe_error_free()`.
// Ownership: `json` is copied; the caller keeps it.
// Thread safety: not while another thread uses `request`. Does not block.
//
// # Safety
//
// `request` is NULL or a live request; `json` is NULL or a NUL-terminated string;
// `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_request_set_sounds_like_json(ctxscribe_request *request,
                                                        const char *json,
                                                        ctxscribe_error **err_out);

// Creates a cancel token that is not cancelled.
//
// Ownership: the caller frees it with `ctxscribe_cancel_token_free()`. Returns NULL only
// if the library failed internally (a caught panic).
// Thread safety: any thread. Does not block.
ctxscribe_cancel_token *ctxscribe_cancel_token_new(void);

// Cancels every call holding `token` (through run options). Cancelling twice, before a
// call starts or after it ended is harmless.
//
// NULL rules: `ctxscribe_cancel_token_cancel(NULL)` does nothing.
// Thread safety: any thread, also while calls holding the token run. Does not block.
//
// # Safety
//
// `token` is NULL or a live token.
void ctxscribe_cancel_token_cancel(const ctxscribe_cancel_token *token);

// Whether `ctxscribe_cancel_token_cancel()` was called on `token`; false for NULL.
//
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `token` is NULL or a live token.
bool ctxscribe_cancel_token_is_cancelled(const ctxscribe_cancel_token *token);

// Frees a cancel token. Run options and calls that hold it keep working with it.
//
// NULL rules: `ctxscribe_cancel_token_free(NULL)` does nothing.
// Thread safety: once no other thread uses `token` itself. Does not block.
//
// # Safety
//
// `token` is NULL or a token from `ctxscribe_cancel_token_new()` not freed yet; it must
// not be used afterwards.
void ctxscribe_cancel_token_free(ctxscribe_cancel_token *token);

// Creates run options with no cancel token, no time limit (the configuration's
// `timeout_ms` still applies) and no callback.
//
// Ownership: the caller frees them with `ctxscribe_run_options_free()`. Returns NULL
// only if the library failed internally (a caught panic).
// Thread safety: any thread. Does not block.
ctxscribe_run_options *ctxscribe_run_options_new(void);

// Frees run options.
//
// NULL rules: `ctxscribe_run_options_free(NULL)` does nothing.
// Thread safety: once no call uses `options`. Does not block.
//
// # Safety
//
// `options` is NULL or options from `ctxscribe_run_options_new()` not freed yet; they
// must not be used afterwards.
void ctxscribe_run_options_free(ctxscribe_run_options *options);

// Makes calls with `options` stop when `token` is cancelled; NULL `token` removes it.
// The options keep their own reference: `token` may be freed afterwards.
//
// NULL rules: `options` must not be NULL (`CTXSCRIBE_STATUS_NULL_ARGUMENT`). `err_out`
// may be NULL; otherwise, on failure only, `*err_out` receives an error object to free
// with `ctxscribe_error_free()`.
// Thread safety: not while another thread uses `options`. Does not block.
//
// # Safety
//
// `options` is NULL or live options nobody else uses; `token` is NULL or a live token;
// `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_run_options_set_cancel_token(ctxscribe_run_options *options,
                                                        const ctxscribe_cancel_token *token,
                                                        ctxscribe_error **err_out);

// Gives up on calls with `options` after this many milliseconds, failing with
// `CTXSCRIBE_STATUS_DEADLINE_EXCEEDED`; 0 means no limit beyond the configuration's.
//
// NULL rules, thread safety: as `ctxscribe_run_options_set_cancel_token()`.
//
// # Safety
//
// `options` is NULL or live options nobody else uses; `err_out` is NULL or valid for
// writing one pointer.
ctxscribe_status ctxscribe_run_options_set_timeout_ms(ctxscribe_run_options *options,
                                                      uint64_t timeout_ms,
                                                      ctxscribe_error **err_out);

// Calls `callback` with `user_data` for each timed segment of each window as soon as the
// window is final, on the thread that called `ctxscribe_transcriber_transcribe_with()`
// (the run itself works on the library's threads meanwhile); a non-zero return stops
// the run. NULL `callback` removes it. The segments of the final transcript are
// authoritative.
//
// NULL rules, thread safety: as `ctxscribe_run_options_set_cancel_token()`.
//
// # Safety
//
// `options` is NULL or live options nobody else uses; `callback`, if not NULL, is safe
// to call with `user_data` from the thread that runs a call with these options, for as
// long as the options are used; `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_run_options_set_on_segment(ctxscribe_run_options *options,
                                                      ctxscribe_segment_callback callback,
                                                      void *user_data,
                                                      ctxscribe_error **err_out);

// Creates a transcriber, loading the model (and the VAD model) once.
//
// Blocks while the model loads: from a fraction of a second to several seconds for
// large models.
//
// Errors: `CTXSCRIBE_STATUS_MODEL_UNAVAILABLE` when the model or the VAD model is
// missing or cannot be loaded (the message says which and how to install it).
// NULL rules: `config` may be NULL for every default; `out` must not be NULL
// (`CTXSCRIBE_STATUS_NULL_ARGUMENT`). `*out` is written on success only. `err_out` may
// be NULL; otherwise, on failure only, `*err_out` receives an error object to free with
// `ctxscribe_error_free()`.
// Ownership: the caller owns `*out` and frees it with `ctxscribe_transcriber_free()`;
// `config` is only read and may be freed right after this call.
// Thread safety: any thread, as long as no other thread changes `config` meanwhile.
//
// # Safety
//
// `config` is NULL or a live config; `out` is NULL or valid for writing one pointer;
// `err_out` is NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_transcriber_new(const ctxscribe_config *config,
                                           ctxscribe_transcriber **out,
                                           ctxscribe_error **err_out);

// Frees a transcriber and its model.
//
// NULL rules: `ctxscribe_transcriber_free(NULL)` does nothing.
// Thread safety: only once every call using `transcriber` has returned, in all
// threads. Does not block (beyond releasing memory).
//
// # Safety
//
// `transcriber` is NULL or a transcriber from `ctxscribe_transcriber_new()` not freed
// yet; no other thread uses it, and it must not be used afterwards.
void ctxscribe_transcriber_free(ctxscribe_transcriber *transcriber);

// Whether the loaded model knows more languages than English (false for `*.en`
// models, which can only transcribe English).
//
// NULL rules: returns false if `transcriber` is NULL.
// Thread safety: any thread, concurrently with other calls. Does not block.
//
// # Safety
//
// `transcriber` is NULL or a live transcriber.
bool ctxscribe_transcriber_is_multilingual(const ctxscribe_transcriber *transcriber);

// The device the engine runs on, as text: `CPU (<kernels>)`, or the GPU's ggml name
// and description (`Vulkan0 (<device>)`), followed by why no GPU was used when a GPU
// build found none (`CTXSCRIBE_DEVICE=auto`); `remote` with a remote speech provider.
//
// NULL rules: returns NULL if `transcriber` is NULL.
// Ownership: the string belongs to the transcriber; it stays valid until
// `ctxscribe_transcriber_free()`. Do not free it.
// Thread safety: any thread, concurrently with other calls. Does not block.
//
// # Safety
//
// `transcriber` is NULL or a live transcriber.
const char *ctxscribe_transcriber_backend(const ctxscribe_transcriber *transcriber);

// Transcribes an encoded audio file (wav, webm, mp3, m4a or ogg; the container is
// detected from the bytes) with the context of `request`.
//
// Blocks the calling thread until the whole file is transcribed; the time grows with
// the audio's duration and the model's size. Silence or noise gives an empty text, not
// an error.
//
// Errors: `CTXSCRIBE_STATUS_UNSUPPORTED_AUDIO_TYPE` (flac, text, empty input, ...),
// `CTXSCRIBE_STATUS_AUDIO_DECODE_FAILED` (truncated or corrupt),
// `CTXSCRIBE_STATUS_FILE_TOO_LARGE`, `CTXSCRIBE_STATUS_AUDIO_TOO_LONG`,
// `CTXSCRIBE_STATUS_INVALID_REQUEST` (e.g. a language the model does not know),
// `CTXSCRIBE_STATUS_TRANSCRIPTION_FAILED` (engine failure),
// `CTXSCRIBE_STATUS_DEADLINE_EXCEEDED` (the configuration's timeout passed).
// NULL rules: `transcriber`, `audio` and `out` must not be NULL
// (`CTXSCRIBE_STATUS_NULL_ARGUMENT`, even when `audio_len` is 0); `request` may be NULL
// for no context. `*out` is written on success only. `err_out` may be NULL; otherwise,
// on failure only, `*err_out` receives an error object to free with
// `ctxscribe_error_free()`.
// Ownership: `audio` and `request` are only read during the call; the caller owns
// `*out` and frees it with `ctxscribe_transcript_free()`.
// Thread safety: any number of threads may call this at once with the same
// `transcriber` (and the same `request`, if no thread changes it).
//
// # Safety
//
// `transcriber` is NULL or live; `request` is NULL or a live request nobody changes
// meanwhile; `audio` is NULL or points to `audio_len` readable bytes; `out` and
// `err_out` are NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_transcriber_transcribe(const ctxscribe_transcriber *transcriber,
                                                  const ctxscribe_request *request,
                                                  const uint8_t *audio,
                                                  size_t audio_len,
                                                  ctxscribe_transcript **out,
                                                  ctxscribe_error **err_out);

// `ctxscribe_transcriber_transcribe()` as `options` say: a cancel token
// (`CTXSCRIBE_STATUS_CANCELLED` once cancelled), a time limit
// (`CTXSCRIBE_STATUS_DEADLINE_EXCEEDED`) and a callback for each finished segment,
// called on this thread while the run works on the library's threads (a non-zero
// return stops the run: `CTXSCRIBE_STATUS_CANCELLED`). When it returns, the run is over.
//
// Errors, NULL rules, ownership, thread safety: as
// `ctxscribe_transcriber_transcribe()`; `options` may be NULL (no options) and is only
// read during the call.
//
// # Safety
//
// As `ctxscribe_transcriber_transcribe()`; `options` is NULL or live options nobody
// changes meanwhile, whose callback (if any) is safe to call with its user data on this
// thread.
ctxscribe_status ctxscribe_transcriber_transcribe_with(const ctxscribe_transcriber *transcriber,
                                                       const ctxscribe_request *request,
                                                       const ctxscribe_run_options *options,
                                                       const uint8_t *audio,
                                                       size_t audio_len,
                                                       ctxscribe_transcript **out,
                                                       ctxscribe_error **err_out);

// Transcribes mono PCM: `n_samples` 32-bit float samples in [-1, 1] at `sample_rate`
// Hz (16000 is what Whisper uses; other rates from 1000 to 384000 are resampled). Out of
// range samples are clamped, NaN and infinities become 0.
//
// Blocks the calling thread until the transcript is ready, like
// `ctxscribe_transcriber_transcribe()`.
//
// Errors: `CTXSCRIBE_STATUS_INVALID_REQUEST` (param `"file"`) for a sample rate out of
// range, `CTXSCRIBE_STATUS_AUDIO_TOO_LONG`, and the request and engine errors of
// `ctxscribe_transcriber_transcribe()`.
// NULL rules: `transcriber`, `samples` and `out` must not be NULL
// (`CTXSCRIBE_STATUS_NULL_ARGUMENT`, even when `n_samples` is 0); `request` may be NULL
// for no context. `*out` is written on success only. `err_out` may be NULL; otherwise,
// on failure only, `*err_out` receives an error object to free with
// `ctxscribe_error_free()`.
// Ownership: `samples` and `request` are only read during the call; the caller owns
// `*out` and frees it with `ctxscribe_transcript_free()`.
// Thread safety: as `ctxscribe_transcriber_transcribe()`.
//
// # Safety
//
// `transcriber` is NULL or live; `request` is NULL or a live request nobody changes
// meanwhile; `samples` is NULL or points to `n_samples` readable, aligned floats; `out`
// and `err_out` are NULL or valid for writing one pointer.
ctxscribe_status ctxscribe_transcriber_transcribe_pcm(const ctxscribe_transcriber *transcriber,
                                                      const ctxscribe_request *request,
                                                      const float *samples,
                                                      size_t n_samples,
                                                      uint32_t sample_rate,
                                                      ctxscribe_transcript **out,
                                                      ctxscribe_error **err_out);

// `ctxscribe_transcriber_transcribe_pcm()` as `options` say (see
// `ctxscribe_transcriber_transcribe_with()`).
//
// # Safety
//
// As `ctxscribe_transcriber_transcribe_pcm()`; `options` as in
// `ctxscribe_transcriber_transcribe_with()`.
ctxscribe_status ctxscribe_transcriber_transcribe_pcm_with(const ctxscribe_transcriber *transcriber,
                                                           const ctxscribe_request *request,
                                                           const ctxscribe_run_options *options,
                                                           const float *samples,
                                                           size_t n_samples,
                                                           uint32_t sample_rate,
                                                           ctxscribe_transcript **out,
                                                           ctxscribe_error **err_out);

// Returns the transcript text: UTF-8, NUL-terminated, whitespace-normalised; empty
// (`""`, never NULL) when the audio holds no speech.
//
// NULL rules: returns NULL if `transcript` is NULL.
// Ownership: borrowed from `transcript`, valid until `ctxscribe_transcript_free()`.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `transcript` is NULL or a live transcript.
const char *ctxscribe_transcript_text(const ctxscribe_transcript *transcript);

// Returns the Whisper code of the language the audio was transcribed in (`"en"`,
// `"de"`, ...).
//
// NULL rules: returns NULL if `transcript` is NULL or the audio held no speech.
// Ownership: borrowed from `transcript`, valid until `ctxscribe_transcript_free()`.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `transcript` is NULL or a live transcript.
const char *ctxscribe_transcript_language(const ctxscribe_transcript *transcript);

// Returns the duration of the input audio in seconds.
//
// NULL rules: returns 0.0 if `transcript` is NULL.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `transcript` is NULL or a live transcript.
double ctxscribe_transcript_audio_secs(const ctxscribe_transcript *transcript);

// Returns the wall-clock time the transcription took, in seconds (decoding the audio
// and running the engine).
//
// NULL rules: returns 0.0 if `transcript` is NULL.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `transcript` is NULL or a live transcript.
double ctxscribe_transcript_processing_secs(const ctxscribe_transcript *transcript);

// Returns the number of timed segments of the transcript (0 when the audio holds no
// speech). Segments are in order and their times never go back; their texts joined by
// spaces are `ctxscribe_transcript_text()`.
//
// NULL rules: returns 0 if `transcript` is NULL.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `transcript` is NULL or a live transcript.
size_t ctxscribe_transcript_segment_count(const ctxscribe_transcript *transcript);

// Returns where segment `index` (0 to `ctxscribe_transcript_segment_count() - 1`)
// starts, in seconds from the start of the audio.
//
// NULL rules: returns -1.0 if `transcript` is NULL or `index` is out of range.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `transcript` is NULL or a live transcript.
double ctxscribe_transcript_segment_start(const ctxscribe_transcript *transcript, size_t index);

// Returns where segment `index` (0 to `ctxscribe_transcript_segment_count() - 1`) ends,
// in seconds from the start of the audio; never before its start.
//
// NULL rules: returns -1.0 if `transcript` is NULL or `index` is out of range.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `transcript` is NULL or a live transcript.
double ctxscribe_transcript_segment_end(const ctxscribe_transcript *transcript, size_t index);

// Returns the text of segment `index` (0 to `ctxscribe_transcript_segment_count() - 1`):
// UTF-8, NUL-terminated, without leading or trailing whitespace.
//
// NULL rules: returns NULL if `transcript` is NULL or `index` is out of range.
// Ownership: borrowed from `transcript`, valid until `ctxscribe_transcript_free()`.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `transcript` is NULL or a live transcript.
const char *ctxscribe_transcript_segment_text(const ctxscribe_transcript *transcript, size_t index);

// Returns the number of warnings of a successful transcription: things the caller
// should know although it succeeded, e.g. `audio_truncated` (the file was cut short;
// the audio before the cut is transcribed). 0 for most transcripts.
//
// NULL rules: returns 0 if `transcript` is NULL.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `transcript` is NULL or a live transcript.
size_t ctxscribe_transcript_warning_count(const ctxscribe_transcript *transcript);

// Returns the code of warning `index` (`"audio_truncated"`): stable, ASCII.
//
// NULL rules: returns NULL if `transcript` is NULL or `index` is not below
// `ctxscribe_transcript_warning_count()`.
// Ownership: borrowed from `transcript`, valid until `ctxscribe_transcript_free()`.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `transcript` is NULL or a live transcript.
const char *ctxscribe_transcript_warning_code(const ctxscribe_transcript *transcript, size_t index);

// Returns the message of warning `index`: a UTF-8 sentence saying where and how much.
//
// NULL rules: returns NULL if `transcript` is NULL or `index` is not below
// `ctxscribe_transcript_warning_count()`.
// Ownership: borrowed from `transcript`, valid until `ctxscribe_transcript_free()`.
// Thread safety: any thread. Does not block.
//
// # Safety
//
// `transcript` is NULL or a live transcript.
const char *ctxscribe_transcript_warning_message(const ctxscribe_transcript *transcript,
                                                 size_t index);

// Frees a transcript and the strings borrowed from it.
//
// NULL rules: `ctxscribe_transcript_free(NULL)` does nothing.
// Thread safety: once no other thread uses `transcript`. Does not block.
//
// # Safety
//
// `transcript` is NULL or a transcript from this library not freed yet; it must not be
// used afterwards.
void ctxscribe_transcript_free(ctxscribe_transcript *transcript);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* CTXSCRIBE_H */
