/*
 * C tests of ctxscribe's C API, on real audio and real models.
 *
 *   test_ctxscribe TINY_EN_MODEL BASE_MODEL JFK_WAV FLAC_FILE GERMAN_WAV
 *
 * Built and run by ffi/tests/run-c-tests.sh with -std=c11 -Wall -Wextra -Werror and
 * AddressSanitizer (with LeakSanitizer) + UndefinedBehaviorSanitizer. Prints one line
 * per test and a last line "N passed, M failed"; exits non-zero if any test failed.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctxscribe.h"

/* ---- a minimal harness ------------------------------------------------------------ */

static const char *current_test;
static int current_failures;

static void fail_at(int line, const char *what) {
    fprintf(stderr, "  %s: line %d: %s\n", current_test, line, what);
    current_failures++;
}

#define EXPECT(cond)                          \
    do {                                      \
        if (!(cond)) {                        \
            fail_at(__LINE__, "expected " #cond); \
        }                                     \
    } while (0)

static double now_secs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int contains(const char *haystack, const char *needle) {
    return haystack != NULL && needle != NULL && strstr(haystack, needle) != NULL;
}

static int same(const char *a, const char *b) {
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/*
 * Checks a failed call: its status, the error object it produced (status, code, param,
 * a message containing `needle`), then frees the error object. `param` and `needle`
 * may be NULL to skip those checks.
 */
static void check_error(int line, ctxscribe_status got, ctxscribe_status want,
                        ctxscribe_error *err, const char *param, const char *needle) {
    char what[512];
    if (got != want) {
        snprintf(what, sizeof what, "status %u (%s), expected %u (%s); message: %s",
                 (unsigned)got, ctxscribe_status_code(got), (unsigned)want,
                 ctxscribe_status_code(want),
                 err != NULL ? ctxscribe_error_message(err) : "(no error object)");
        fail_at(line, what);
    } else if (err == NULL) {
        fail_at(line, "no error object was written");
    } else {
        const char *message = ctxscribe_error_message(err);
        if (ctxscribe_error_status(err) != want) {
            fail_at(line, "the error object has another status");
        }
        if (!same(ctxscribe_error_code(err), ctxscribe_status_code(want))) {
            fail_at(line, "the error object has another code");
        }
        if (message == NULL || message[0] == '\0') {
            fail_at(line, "the error message is empty");
        }
        if (param != NULL && !same(ctxscribe_error_param(err), param)) {
            snprintf(what, sizeof what, "param \"%s\", expected \"%s\"",
                     ctxscribe_error_param(err) ? ctxscribe_error_param(err) : "(NULL)",
                     param);
            fail_at(line, what);
        }
        if (needle != NULL && !contains(message, needle)) {
            snprintf(what, sizeof what, "message \"%s\" lacks \"%s\"", message, needle);
            fail_at(line, what);
        }
    }
    ctxscribe_error_free(err);
}

/* Runs CALL, which must use `&err`, and checks that it fails as described. */
#define EXPECT_FAILS(want, param, needle, CALL)                         \
    do {                                                                \
        ctxscribe_error *err = NULL;                                    \
        ctxscribe_status status_ = (CALL);                              \
        check_error(__LINE__, status_, (want), err, (param), (needle)); \
    } while (0)

/* Runs CALL, which must use `&err`, and checks that it succeeds without an error. */
#define EXPECT_OK(CALL)                                                              \
    do {                                                                             \
        ctxscribe_error *err = NULL;                                                 \
        ctxscribe_status status_ = (CALL);                                           \
        if (status_ != CTXSCRIBE_STATUS_OK || err != NULL) {                         \
            char what_[512];                                                         \
            snprintf(what_, sizeof what_, "%s failed: %s: %s", #CALL,                \
                     ctxscribe_status_code(status_),                                 \
                     err ? ctxscribe_error_message(err) : "(no error object)");      \
            fail_at(__LINE__, what_);                                                \
        }                                                                            \
        ctxscribe_error_free(err);                                                   \
    } while (0)

/* ---- fixtures ----------------------------------------------------------------------- */

static const char *tiny_model, *base_model, *jfk_path, *flac_path, *german_path;
static unsigned char *jfk_wav;
static size_t jfk_wav_len;
static float *jfk_pcm; /* the samples of jfk_wav (44.1 kHz stereo) as mono floats */
static size_t jfk_pcm_len;
static uint32_t jfk_rate;
/* The transcriber most tests share: tiny.en, one engine thread per call. */
static ctxscribe_transcriber *tiny;

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        perror(path);
        return NULL;
    }
    if (fseek(file, 0, SEEK_END) != 0) {
        fclose(file);
        return NULL;
    }
    long size = ftell(file);
    rewind(file);
    unsigned char *data = size >= 0 ? malloc((size_t)size + 1) : NULL;
    if (data != NULL && fread(data, 1, (size_t)size, file) != (size_t)size) {
        free(data);
        data = NULL;
    }
    fclose(file);
    *len = data != NULL ? (size_t)size : 0;
    return data;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* The samples of a 16-bit PCM wav, averaged over its channels, as floats in [-1, 1);
 * NULL if it is not one. */
static float *wav_to_pcm(const unsigned char *wav, size_t len, size_t *n, uint32_t *rate) {
    if (len < 12 || memcmp(wav, "RIFF", 4) != 0 || memcmp(wav + 8, "WAVE", 4) != 0) {
        return NULL;
    }
    unsigned channels = 0;
    for (size_t at = 12; at + 8 <= len;) {
        uint32_t size = le32(wav + at + 4);
        const unsigned char *body = wav + at + 8;
        if (memcmp(wav + at, "fmt ", 4) == 0 && size >= 16 && at + 8 + 16 <= len) {
            int s16 = le16(body) == 1 && le16(body + 14) == 16;
            channels = s16 ? le16(body + 2) : 0;
            *rate = le32(body + 4);
        } else if (memcmp(wav + at, "data", 4) == 0 && channels > 0) {
            size_t bytes = size <= len - at - 8 ? size : len - at - 8;
            size_t frames = bytes / (2 * channels);
            float *samples = malloc((frames + 1) * sizeof *samples);
            if (samples == NULL) {
                return NULL;
            }
            for (size_t i = 0; i < frames; i++) {
                float sum = 0.0f;
                for (unsigned c = 0; c < channels; c++) {
                    sum += (float)(int16_t)le16(body + 2 * (i * channels + c)) / 32768.0f;
                }
                samples[i] = sum / (float)channels;
            }
            *n = frames;
            return samples;
        }
        at += 8 + (size_t)size + (size & 1);
    }
    return NULL;
}

/* A 16 kHz mono 16-bit wav of `secs` seconds of digital silence. */
static unsigned char *silent_wav(uint32_t secs, size_t *len) {
    uint32_t data = secs * 16000 * 2;
    unsigned char *wav = calloc(1, 44 + (size_t)data);
    if (wav == NULL) {
        return NULL;
    }
    const uint32_t fields[] = {36 + data, 16, 16000 * 2, data};
    memcpy(wav, "RIFF", 4);
    memcpy(wav + 4, &fields[0], 4); /* little-endian hosts only, like the tests */
    memcpy(wav + 8, "WAVEfmt ", 8);
    memcpy(wav + 16, &fields[1], 4);
    const uint16_t fmt[] = {1, 1};
    memcpy(wav + 20, fmt, 4);
    const uint32_t rate = 16000;
    memcpy(wav + 24, &rate, 4);
    memcpy(wav + 28, &fields[2], 4);
    const uint16_t align_bits[] = {2, 16};
    memcpy(wav + 32, align_bits, 4);
    memcpy(wav + 36, "data", 4);
    memcpy(wav + 40, &fields[3], 4);
    *len = 44 + (size_t)data;
    return wav;
}

/* Lower-case letters, digits and single spaces: the words of a transcript. */
static void normalize(const char *text, char *out, size_t cap) {
    size_t used = 0;
    int space = 1;
    for (; text != NULL && *text != '\0' && used + 1 < cap; text++) {
        unsigned char c = (unsigned char)*text;
        if (isalnum(c)) {
            out[used++] = (char)tolower(c);
            space = 0;
        } else if (!space && c != '\'') {
            out[used++] = ' ';
            space = 1;
        }
    }
    while (used > 0 && out[used - 1] == ' ') {
        used--;
    }
    out[used] = '\0';
}

static ctxscribe_transcriber *new_transcriber(const char *model, uint32_t threads) {
    ctxscribe_config *config = ctxscribe_config_new();
    ctxscribe_transcriber *transcriber = NULL;
    EXPECT(config != NULL);
    EXPECT_OK(ctxscribe_config_set_model_path(config, model, &err));
    EXPECT_OK(ctxscribe_config_set_threads(config, threads, &err));
    EXPECT_OK(ctxscribe_transcriber_new(config, &transcriber, &err));
    ctxscribe_config_free(config);
    return transcriber;
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_version_and_status_codes(void) {
    EXPECT(contains(ctxscribe_version(), "."));
    EXPECT(CTXSCRIBE_STATUS_OK == 0);
    EXPECT(CTXSCRIBE_STATUS_INVALID_REQUEST == 1);
    EXPECT(CTXSCRIBE_STATUS_UNSUPPORTED_AUDIO_TYPE == 2);
    EXPECT(CTXSCRIBE_STATUS_AUDIO_DECODE_FAILED == 3);
    EXPECT(CTXSCRIBE_STATUS_FILE_TOO_LARGE == 4);
    EXPECT(CTXSCRIBE_STATUS_AUDIO_TOO_LONG == 5);
    EXPECT(CTXSCRIBE_STATUS_MODEL_UNAVAILABLE == 6);
    EXPECT(CTXSCRIBE_STATUS_TRANSCRIPTION_FAILED == 7);
    EXPECT(CTXSCRIBE_STATUS_CANCELLED == 8);
    EXPECT(CTXSCRIBE_STATUS_DEADLINE_EXCEEDED == 9);
    EXPECT(CTXSCRIBE_STATUS_NULL_ARGUMENT == 100);
    EXPECT(CTXSCRIBE_STATUS_PANIC == 101);
    EXPECT(CTXSCRIBE_STATUS_UNKNOWN_ERROR == 102);
    EXPECT(sizeof(ctxscribe_status) == 4);
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_OK), "ok"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_INVALID_REQUEST), "invalid_request"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_UNSUPPORTED_AUDIO_TYPE),
                "unsupported_audio_type"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_AUDIO_DECODE_FAILED),
                "audio_decode_failed"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_FILE_TOO_LARGE), "file_too_large"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_AUDIO_TOO_LONG), "audio_too_long"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_MODEL_UNAVAILABLE), "model_unavailable"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_TRANSCRIPTION_FAILED),
                "transcription_failed"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_CANCELLED), "cancelled"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_DEADLINE_EXCEEDED), "deadline_exceeded"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_NULL_ARGUMENT), "null_argument"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_PANIC), "panic"));
    EXPECT(same(ctxscribe_status_code(CTXSCRIBE_STATUS_UNKNOWN_ERROR), "unknown_error"));
    EXPECT(ctxscribe_status_code(10) == NULL);
    EXPECT(ctxscribe_status_code(99) == NULL);
    EXPECT(ctxscribe_status_code(UINT32_MAX) == NULL);
    EXPECT(CTXSCRIBE_ROLE_SYSTEM == 0 && CTXSCRIBE_ROLE_USER == 1);
    EXPECT(CTXSCRIBE_MAX_BEAM_SIZE == 8);
    EXPECT(CTXSCRIBE_MAX_THREADS == 512);
}

static void test_free_null_is_a_no_op(void) {
    ctxscribe_config_free(NULL);
    ctxscribe_request_free(NULL);
    ctxscribe_transcriber_free(NULL);
    ctxscribe_transcript_free(NULL);
    ctxscribe_error_free(NULL);
    /* Accessors accept NULL too. */
    EXPECT(ctxscribe_error_status(NULL) == CTXSCRIBE_STATUS_OK);
    EXPECT(ctxscribe_error_code(NULL) == NULL);
    EXPECT(ctxscribe_error_message(NULL) == NULL);
    EXPECT(ctxscribe_error_param(NULL) == NULL);
    EXPECT(ctxscribe_transcript_text(NULL) == NULL);
    EXPECT(ctxscribe_transcript_language(NULL) == NULL);
    EXPECT(ctxscribe_transcript_audio_secs(NULL) == 0.0);
    EXPECT(ctxscribe_transcript_processing_secs(NULL) == 0.0);
    EXPECT(ctxscribe_transcript_segment_count(NULL) == 0);
    EXPECT(ctxscribe_transcript_segment_start(NULL, 0) == -1.0);
    EXPECT(ctxscribe_transcript_segment_end(NULL, 0) == -1.0);
    EXPECT(ctxscribe_transcript_segment_text(NULL, 0) == NULL);
    EXPECT(!ctxscribe_transcriber_is_multilingual(NULL));
    EXPECT(ctxscribe_transcriber_backend(NULL) == NULL);
}

static void test_null_arguments(void) {
    const ctxscribe_status NUL = CTXSCRIBE_STATUS_NULL_ARGUMENT;
    ctxscribe_config *config = ctxscribe_config_new();
    ctxscribe_request *request = ctxscribe_request_new();
    /* Outputs are written on success only: these must stay as they are. */
    ctxscribe_transcriber *const t_sentinel = (ctxscribe_transcriber *)&config;
    ctxscribe_transcript *const r_sentinel = (ctxscribe_transcript *)&request;
    ctxscribe_transcriber *transcriber = t_sentinel;
    ctxscribe_transcript *transcript = r_sentinel;
    const unsigned char bytes[4] = {0};
    const float samples[4] = {0};

    EXPECT_FAILS(NUL, "config", "NULL", ctxscribe_config_set_model_path(NULL, "m", &err));
    EXPECT_FAILS(NUL, "config", NULL, ctxscribe_config_set_vad_model_path(NULL, NULL, &err));
    EXPECT_FAILS(NUL, "config", NULL, ctxscribe_config_disable_vad(NULL, &err));
    EXPECT_FAILS(NUL, "config", NULL, ctxscribe_config_set_threads(NULL, 1, &err));
    EXPECT_FAILS(NUL, "config", NULL, ctxscribe_config_set_beam_size(NULL, 1, &err));
    EXPECT_FAILS(NUL, "config", NULL, ctxscribe_config_set_max_file_bytes(NULL, 1, &err));
    EXPECT_FAILS(NUL, "config", NULL, ctxscribe_config_set_max_duration_secs(NULL, 1, &err));
    EXPECT_FAILS(NUL, "config", NULL, ctxscribe_config_set_timeout_ms(NULL, 1, &err));

    EXPECT_FAILS(NUL, "request", NULL,
                 ctxscribe_request_add_message(NULL, CTXSCRIBE_ROLE_USER, "x", &err));
    EXPECT_FAILS(NUL, "content", NULL,
                 ctxscribe_request_add_message(request, CTXSCRIBE_ROLE_USER, NULL, &err));
    EXPECT_FAILS(NUL, "request", NULL, ctxscribe_request_add_language(NULL, "en", &err));
    EXPECT_FAILS(NUL, "code", NULL, ctxscribe_request_add_language(request, NULL, &err));
    EXPECT_FAILS(NUL, "request", NULL, ctxscribe_request_add_dictionary_term(NULL, "x", &err));
    EXPECT_FAILS(NUL, "term", NULL, ctxscribe_request_add_dictionary_term(request, NULL, &err));
    EXPECT_FAILS(NUL, "request", NULL, ctxscribe_request_set_messages_json(NULL, "[]", &err));
    EXPECT_FAILS(NUL, "json", NULL, ctxscribe_request_set_messages_json(request, NULL, &err));
    EXPECT_FAILS(NUL, "request", NULL, ctxscribe_request_set_languages(NULL, "en", &err));
    EXPECT_FAILS(NUL, "text", NULL, ctxscribe_request_set_languages(request, NULL, &err));
    EXPECT_FAILS(NUL, "request", NULL, ctxscribe_request_set_dictionary(NULL, "x", &err));
    EXPECT_FAILS(NUL, "text", NULL, ctxscribe_request_set_dictionary(request, NULL, &err));
    EXPECT_FAILS(NUL, "request", NULL, ctxscribe_request_add_sounds_like(NULL, "x", "y", &err));
    EXPECT_FAILS(NUL, "term", NULL, ctxscribe_request_add_sounds_like(request, NULL, "y", &err));
    EXPECT_FAILS(NUL, "form", NULL, ctxscribe_request_add_sounds_like(request, "x", NULL, &err));
    EXPECT_FAILS(NUL, "request", NULL, ctxscribe_request_set_sounds_like_json(NULL, "{}", &err));
    EXPECT_FAILS(NUL, "json", NULL, ctxscribe_request_set_sounds_like_json(request, NULL, &err));

    EXPECT_FAILS(NUL, "out", NULL, ctxscribe_transcriber_new(config, NULL, &err));
    EXPECT_FAILS(NUL, "transcriber", NULL,
                 ctxscribe_transcriber_transcribe(NULL, request, bytes, sizeof bytes,
                                                  &transcript, &err));
    EXPECT_FAILS(NUL, "audio", NULL,
                 ctxscribe_transcriber_transcribe(tiny, request, NULL, 0, &transcript, &err));
    EXPECT_FAILS(NUL, "out", NULL,
                 ctxscribe_transcriber_transcribe(tiny, request, jfk_wav, jfk_wav_len, NULL,
                                                  &err));
    EXPECT_FAILS(NUL, "transcriber", NULL,
                 ctxscribe_transcriber_transcribe_pcm(NULL, NULL, samples, 4, 16000,
                                                      &transcript, &err));
    EXPECT_FAILS(NUL, "samples", NULL,
                 ctxscribe_transcriber_transcribe_pcm(tiny, NULL, NULL, 0, 16000, &transcript,
                                                      &err));
    EXPECT_FAILS(NUL, "out", NULL,
                 ctxscribe_transcriber_transcribe_pcm(tiny, NULL, samples, 4, 16000, NULL,
                                                      &err));
    EXPECT(transcriber == t_sentinel);
    EXPECT(transcript == r_sentinel);

    /* err_out is optional: the status alone. */
    EXPECT(ctxscribe_request_add_language(request, NULL, NULL) == NUL);
    EXPECT(ctxscribe_transcriber_transcribe(tiny, NULL, NULL, 0, &transcript, NULL) == NUL);
    EXPECT(transcript == r_sentinel);
    EXPECT(ctxscribe_config_set_threads(config, 1, NULL) == CTXSCRIBE_STATUS_OK);

    ctxscribe_request_free(request);
    ctxscribe_config_free(config);
}

static void test_config_errors(void) {
    const ctxscribe_status BAD = CTXSCRIBE_STATUS_INVALID_REQUEST;
    ctxscribe_config *config = ctxscribe_config_new();
    EXPECT_OK(ctxscribe_config_set_beam_size(config, CTXSCRIBE_MAX_BEAM_SIZE, &err));
    EXPECT_OK(ctxscribe_config_set_beam_size(config, 0, &err));
    EXPECT_FAILS(BAD, "beam_size", "9", ctxscribe_config_set_beam_size(config, 9, &err));
    EXPECT_OK(ctxscribe_config_set_threads(config, CTXSCRIBE_MAX_THREADS, &err));
    EXPECT_FAILS(BAD, "threads", "513",
                 ctxscribe_config_set_threads(config, CTXSCRIBE_MAX_THREADS + 1, &err));
    EXPECT_FAILS(BAD, "max_duration_secs", NULL,
                 ctxscribe_config_set_max_duration_secs(config, -1.0, &err));
    EXPECT_FAILS(BAD, "max_duration_secs", NULL,
                 ctxscribe_config_set_max_duration_secs(config, NAN, &err));
    EXPECT_FAILS(BAD, "max_duration_secs", NULL,
                 ctxscribe_config_set_max_duration_secs(config, INFINITY, &err));
    ctxscribe_config_free(config);
}

static void test_model_unavailable(void) {
    const ctxscribe_status GONE = CTXSCRIBE_STATUS_MODEL_UNAVAILABLE;
    ctxscribe_config *config = ctxscribe_config_new();
    ctxscribe_transcriber *transcriber = NULL;
    EXPECT_OK(ctxscribe_config_set_model_path(config, "/nonexistent/ggml-x.bin", &err));
    EXPECT_FAILS(GONE, NULL, "ctxscribe models fetch",
                 ctxscribe_transcriber_new(config, &transcriber, &err));
    EXPECT(transcriber == NULL);

    /* A model that exists with a VAD model that does not. */
    EXPECT_OK(ctxscribe_config_set_model_path(config, tiny_model, &err));
    EXPECT_OK(ctxscribe_config_set_vad_model_path(config, "/nonexistent/vad.bin", &err));
    EXPECT_FAILS(GONE, NULL, "VAD", ctxscribe_transcriber_new(config, &transcriber, &err));
    EXPECT(transcriber == NULL);

    /* A file that is not a model. */
    EXPECT_OK(ctxscribe_config_set_model_path(config, flac_path, &err));
    EXPECT_OK(ctxscribe_config_disable_vad(config, &err));
    EXPECT_FAILS(GONE, NULL, NULL, ctxscribe_transcriber_new(config, &transcriber, &err));
    EXPECT(transcriber == NULL);
    ctxscribe_config_free(config);
}

static void test_request_validation(void) {
    const ctxscribe_status BAD = CTXSCRIBE_STATUS_INVALID_REQUEST;
    ctxscribe_request *request = ctxscribe_request_new();

    EXPECT_OK(ctxscribe_request_add_language(request, "en", &err));
    EXPECT_OK(ctxscribe_request_add_language(request, "German", &err));
    EXPECT_OK(ctxscribe_request_add_language(request, "en", &err)); /* a duplicate */
    EXPECT_FAILS(BAD, "languages", "languages[3]",
                 ctxscribe_request_add_language(request, "xx", &err));
    EXPECT_FAILS(BAD, "languages", "en-US", ctxscribe_request_add_language(request, "en-US", &err));
    EXPECT_FAILS(BAD, "languages", "auto", ctxscribe_request_add_language(request, "auto", &err));
    EXPECT_FAILS(BAD, "languages", "empty", ctxscribe_request_add_language(request, " ", &err));
    EXPECT_FAILS(BAD, "languages", "UTF-8",
                 ctxscribe_request_add_language(request, "d\xff", &err));

    EXPECT_OK(ctxscribe_request_add_dictionary_term(request, " kubectl ", &err));
    EXPECT_OK(ctxscribe_request_add_dictionary_term(request, "", &err)); /* ignored */
    EXPECT_OK(ctxscribe_request_add_dictionary_term(request, "Dr. M\xc3\xbcller", &err));
    EXPECT_FAILS(BAD, "dictionary", "dictionary[3]",
                 ctxscribe_request_add_dictionary_term(request, "two\nlines", &err));
    char long_term[102];
    memset(long_term, 'x', 101);
    long_term[101] = '\0';
    EXPECT_FAILS(BAD, "dictionary", "100",
                 ctxscribe_request_add_dictionary_term(request, long_term, &err));
    EXPECT_FAILS(BAD, "dictionary", "UTF-8",
                 ctxscribe_request_add_dictionary_term(request, "\xc3(", &err));

    EXPECT_OK(ctxscribe_request_add_message(request, CTXSCRIBE_ROLE_SYSTEM,
                                            "Notes from a Kubernetes meeting.", &err));
    EXPECT_OK(ctxscribe_request_add_message(request, CTXSCRIBE_ROLE_USER, "", &err));
    EXPECT_FAILS(BAD, "messages", "messages[2].role",
                 ctxscribe_request_add_message(request, 2, "assistant text", &err));
    EXPECT_FAILS(BAD, "messages", "UTF-8",
                 ctxscribe_request_add_message(request, CTXSCRIBE_ROLE_USER, "\xff", &err));
    ctxscribe_request_free(request);

    /* Limits: 100 messages at most; the 101st fails and leaves the request as it was. */
    request = ctxscribe_request_new();
    for (int i = 0; i < 100; i++) {
        EXPECT_OK(ctxscribe_request_add_message(request, CTXSCRIBE_ROLE_USER, "m", &err));
    }
    EXPECT_FAILS(BAD, "messages", "100",
                 ctxscribe_request_add_message(request, CTXSCRIBE_ROLE_USER, "m", &err));
    ctxscribe_request_free(request);

    /* The wire-text forms go through the library's parsers. */
    request = ctxscribe_request_new();
    EXPECT_OK(ctxscribe_request_set_languages(request, "de, en", &err));
    EXPECT_OK(ctxscribe_request_set_languages(request, "[\"de\",\"en\"]", &err));
    EXPECT_OK(ctxscribe_request_set_languages(request, "auto", &err));
    EXPECT_FAILS(BAD, "languages", NULL, ctxscribe_request_set_languages(request, "[]", &err));
    EXPECT_FAILS(BAD, "languages", NULL,
                 ctxscribe_request_set_languages(request, "de,auto", &err));
    EXPECT_OK(ctxscribe_request_set_dictionary(request, "kubectl, Ramipril", &err));
    EXPECT_OK(ctxscribe_request_set_dictionary(request, "[\"a,b\", \"c\"]", &err));
    EXPECT_FAILS(BAD, "dictionary", "dictionary[1]",
                 ctxscribe_request_set_dictionary(request, "[\"a\", 2]", &err));
    EXPECT_OK(ctxscribe_request_set_messages_json(
        request, "[{\"role\":\"system\",\"content\":\"Cardiology.\"}]", &err));
    EXPECT_OK(ctxscribe_request_set_messages_json(request, "", &err));
    EXPECT_FAILS(BAD, "messages", "assistant",
                 ctxscribe_request_set_messages_json(
                     request, "[{\"role\":\"assistant\",\"content\":\"hi\"}]", &err));
    EXPECT_FAILS(BAD, "messages", NULL,
                 ctxscribe_request_set_messages_json(request, "[{", &err));
    ctxscribe_request_free(request);

    /* sounds_like: keys are dictionary terms, forms are words as said. */
    request = ctxscribe_request_new();
    EXPECT_FAILS(BAD, "sounds_like", "not a term of the dictionary",
                 ctxscribe_request_add_sounds_like(request, "Nguyen", "win", &err));
    EXPECT_OK(ctxscribe_request_add_dictionary_term(request, "Nguyen", &err));
    EXPECT_OK(ctxscribe_request_add_sounds_like(request, " Nguyen ", "win", &err));
    EXPECT_OK(ctxscribe_request_add_sounds_like(request, "Nguyen", "nuh-win", &err));
    EXPECT_FAILS(BAD, "sounds_like", "letters, spaces, apostrophes and hyphens",
                 ctxscribe_request_add_sounds_like(request, "Nguyen", "w1n", &err));
    EXPECT_FAILS(BAD, "sounds_like", "empty",
                 ctxscribe_request_add_sounds_like(request, "Nguyen", " ", &err));
    EXPECT_OK(ctxscribe_request_set_sounds_like_json(request, "{\"Nguyen\": [\"win\"]}", &err));
    EXPECT_OK(ctxscribe_request_set_sounds_like_json(request, "", &err));
    EXPECT_FAILS(BAD, "sounds_like", "must be an array of strings",
                 ctxscribe_request_set_sounds_like_json(request, "{\"Nguyen\": \"win\"}", &err));
    EXPECT_FAILS(BAD, "sounds_like", "not a term of the dictionary",
                 ctxscribe_request_set_sounds_like_json(request, "{\"Nguyn\": [\"win\"]}", &err));
    ctxscribe_request_free(request);
}

/* Transcribes jfk_wav with `request`; returns the transcript (NULL on failure). */
static ctxscribe_transcript *transcribe_jfk(const ctxscribe_request *request) {
    ctxscribe_transcript *transcript = NULL;
    EXPECT_OK(ctxscribe_transcriber_transcribe(tiny, request, jfk_wav, jfk_wav_len,
                                               &transcript, &err));
    EXPECT(transcript != NULL);
    return transcript;
}

static int is_jfk(const char *text) {
    char words[1024];
    normalize(text, words, sizeof words);
    return contains(words, "my fellow americans") &&
           contains(words, "ask not what your country can do for you");
}

/* Appends `text` without its whitespace to `out` (of `size` bytes, NUL-terminated). */
static void append_without_spaces(char *out, size_t size, const char *text) {
    size_t len = strlen(out);
    for (; text != NULL && *text != '\0' && len + 1 < size; text++) {
        if (!isspace((unsigned char)*text)) {
            out[len++] = *text;
        }
    }
    out[len] = '\0';
}

/*
 * Checks a transcript's segments: at least one for a non-empty text, times in order
 * within the audio, and their texts together are the text, whitespace aside.
 */
static void check_segments(const ctxscribe_transcript *transcript) {
    size_t count = ctxscribe_transcript_segment_count(transcript);
    const char *text = ctxscribe_transcript_text(transcript);
    char joined[2048] = "", expected[2048] = "";
    double previous_end = 0.0;
    EXPECT((count == 0) == (text != NULL && text[0] == '\0'));
    for (size_t i = 0; i < count; i++) {
        double start = ctxscribe_transcript_segment_start(transcript, i);
        double end = ctxscribe_transcript_segment_end(transcript, i);
        EXPECT(start >= previous_end && end >= start);
        EXPECT(end <= ctxscribe_transcript_audio_secs(transcript) + 0.01);
        append_without_spaces(joined, sizeof joined,
                              ctxscribe_transcript_segment_text(transcript, i));
        previous_end = end;
    }
    append_without_spaces(expected, sizeof expected, text);
    EXPECT(same(joined, expected));
    EXPECT(ctxscribe_transcript_segment_text(transcript, count) == NULL);
    EXPECT(ctxscribe_transcript_segment_start(transcript, count) == -1.0);
}

static void test_transcribe_real_audio(void) {
    EXPECT(!ctxscribe_transcriber_is_multilingual(tiny));

    /* No context. */
    ctxscribe_transcript *transcript = transcribe_jfk(NULL);
    if (transcript != NULL) {
        const char *text = ctxscribe_transcript_text(transcript);
        if (!is_jfk(text)) {
            fprintf(stderr, "  transcript: %s\n", text);
        }
        EXPECT(is_jfk(text));
        EXPECT(same(ctxscribe_transcript_language(transcript), "en"));
        EXPECT(fabs(ctxscribe_transcript_audio_secs(transcript) - 11.0) < 0.1);
        EXPECT(ctxscribe_transcript_processing_secs(transcript) > 0.0);
        EXPECT(ctxscribe_transcript_segment_count(transcript) >= 1);
        check_segments(transcript);
    }
    ctxscribe_transcript_free(transcript);

    /* With messages, a language and dictionary terms. */
    ctxscribe_request *request = ctxscribe_request_new();
    EXPECT_OK(ctxscribe_request_add_message(request, CTXSCRIBE_ROLE_SYSTEM,
                                            "Inaugural address, 1961.", &err));
    EXPECT_OK(ctxscribe_request_add_message(request, CTXSCRIBE_ROLE_USER,
                                            "President Kennedy speaks.", &err));
    EXPECT_OK(ctxscribe_request_add_language(request, "en", &err));
    EXPECT_OK(ctxscribe_request_add_dictionary_term(request, "Americans", &err));
    EXPECT_OK(ctxscribe_request_add_dictionary_term(request, "country", &err));
    transcript = transcribe_jfk(request);
    if (transcript != NULL) {
        EXPECT(is_jfk(ctxscribe_transcript_text(transcript)));
        EXPECT(same(ctxscribe_transcript_language(transcript), "en"));
        check_segments(transcript);
    }
    ctxscribe_transcript_free(transcript);
    ctxscribe_request_free(request);
}

static void test_transcribe_pcm(void) {
    ctxscribe_transcript *transcript = NULL;
    /* 44.1 kHz: the library resamples to 16 kHz. */
    EXPECT(jfk_pcm != NULL && jfk_rate == 44100);
    EXPECT_OK(ctxscribe_transcriber_transcribe_pcm(tiny, NULL, jfk_pcm, jfk_pcm_len, jfk_rate,
                                                   &transcript, &err));
    EXPECT(transcript != NULL && is_jfk(ctxscribe_transcript_text(transcript)));
    ctxscribe_transcript_free(transcript);
    transcript = NULL;

    /* Three seconds of silence: an empty text and no language, not an error. */
    float *silence = calloc(48000, sizeof *silence);
    EXPECT_OK(ctxscribe_transcriber_transcribe_pcm(tiny, NULL, silence, 48000, 16000,
                                                   &transcript, &err));
    if (transcript != NULL) {
        EXPECT(same(ctxscribe_transcript_text(transcript), ""));
        EXPECT(ctxscribe_transcript_language(transcript) == NULL);
        EXPECT(fabs(ctxscribe_transcript_audio_secs(transcript) - 3.0) < 0.01);
        EXPECT(ctxscribe_transcript_segment_count(transcript) == 0);
        check_segments(transcript);
    }
    ctxscribe_transcript_free(transcript);
    transcript = NULL;

    /* A sample rate out of range is an invalid request about the audio. */
    EXPECT_FAILS(CTXSCRIBE_STATUS_INVALID_REQUEST, "file", "sample rate",
                 ctxscribe_transcriber_transcribe_pcm(tiny, NULL, silence, 48000, 0,
                                                      &transcript, &err));
    EXPECT(transcript == NULL);
    free(silence);
}

static void test_unsupported_audio(void) {
    const ctxscribe_status TYPE = CTXSCRIBE_STATUS_UNSUPPORTED_AUDIO_TYPE;
    ctxscribe_transcript *transcript = NULL;
    const char text[] = "This is a text file, not audio.\n";
    EXPECT_FAILS(TYPE, "file", "text",
                 ctxscribe_transcriber_transcribe(tiny, NULL, (const uint8_t *)text,
                                                  sizeof text - 1, &transcript, &err));
    size_t flac_len = 0;
    unsigned char *flac = read_file(flac_path, &flac_len);
    EXPECT(flac != NULL);
    if (flac != NULL) {
        EXPECT_FAILS(TYPE, "file", "flac",
                     ctxscribe_transcriber_transcribe(tiny, NULL, flac, flac_len, &transcript,
                                                      &err));
    }
    free(flac);
    /* An empty input (a valid pointer, zero bytes) has no container at all. */
    EXPECT_FAILS(TYPE, "file", NULL,
                 ctxscribe_transcriber_transcribe(tiny, NULL, jfk_wav, 0, &transcript, &err));
    EXPECT(transcript == NULL);
}

static void test_audio_decode_failed(void) {
    ctxscribe_transcript *transcript = NULL;
    /* A wav cut inside its header, and a wav whose format chunk is garbage. */
    EXPECT_FAILS(CTXSCRIBE_STATUS_AUDIO_DECODE_FAILED, "file", NULL,
                 ctxscribe_transcriber_transcribe(tiny, NULL, jfk_wav, 30, &transcript, &err));
    unsigned char *corrupt = malloc(jfk_wav_len);
    if (corrupt != NULL) {
        memcpy(corrupt, jfk_wav, jfk_wav_len);
        memset(corrupt + 12, 0xA5, 32);
        EXPECT_FAILS(CTXSCRIBE_STATUS_AUDIO_DECODE_FAILED, "file", NULL,
                     ctxscribe_transcriber_transcribe(tiny, NULL, corrupt, jfk_wav_len,
                                                      &transcript, &err));
    }
    free(corrupt);
    EXPECT(transcript == NULL);
}

static void test_truncated_audio_warns(void) {
    /* The first half of jfk.wav: its data chunk declares the whole clip. Transcribed up to
     * the cut, with an audio_truncated warning. */
    ctxscribe_transcript *transcript = NULL;
    EXPECT_OK(ctxscribe_transcriber_transcribe(tiny, NULL, jfk_wav, jfk_wav_len / 2,
                                               &transcript, &err));
    if (transcript != NULL) {
        EXPECT(strlen(ctxscribe_transcript_text(transcript)) > 0);
        EXPECT(ctxscribe_transcript_warning_count(transcript) == 1);
        EXPECT(same(ctxscribe_transcript_warning_code(transcript, 0), "audio_truncated"));
        const char *message = ctxscribe_transcript_warning_message(transcript, 0);
        EXPECT(message != NULL && strstr(message, "WAV data chunk") != NULL);
        EXPECT(ctxscribe_transcript_warning_code(transcript, 1) == NULL);
        EXPECT(ctxscribe_transcript_warning_message(transcript, 1) == NULL);
    }
    ctxscribe_transcript_free(transcript);
    transcript = NULL;
    /* The whole file: no warning. */
    EXPECT_OK(ctxscribe_transcriber_transcribe(tiny, NULL, jfk_wav, jfk_wav_len, &transcript,
                                               &err));
    EXPECT(transcript != NULL && ctxscribe_transcript_warning_count(transcript) == 0);
    EXPECT(ctxscribe_transcript_warning_code(transcript, 0) == NULL);
    ctxscribe_transcript_free(transcript);
    EXPECT(ctxscribe_transcript_warning_count(NULL) == 0);
    EXPECT(ctxscribe_transcript_warning_code(NULL, 0) == NULL);
    EXPECT(ctxscribe_transcript_warning_message(NULL, 0) == NULL);
}

static void test_limits(void) {
    ctxscribe_config *config = ctxscribe_config_new();
    ctxscribe_transcriber *limited = NULL;
    ctxscribe_transcript *transcript = NULL;
    EXPECT_OK(ctxscribe_config_set_model_path(config, tiny_model, &err));
    EXPECT_OK(ctxscribe_config_set_threads(config, 1, &err));
    EXPECT_OK(ctxscribe_config_set_max_file_bytes(config, 100000, &err));
    EXPECT_OK(ctxscribe_config_set_max_duration_secs(config, 2.0, &err));
    EXPECT_OK(ctxscribe_transcriber_new(config, &limited, &err));
    ctxscribe_config_free(config);
    if (limited == NULL) {
        return;
    }
    /* jfk.wav is about 1.9 MB. */
    EXPECT_FAILS(CTXSCRIBE_STATUS_FILE_TOO_LARGE, "file", "100000",
                 ctxscribe_transcriber_transcribe(limited, NULL, jfk_wav, jfk_wav_len,
                                                  &transcript, &err));
    /* 3 s of audio in a 96 kB wav: under the size limit, over the duration limit. */
    size_t wav_len = 0;
    unsigned char *wav = silent_wav(3, &wav_len);
    EXPECT(wav != NULL && wav_len < 100000);
    EXPECT_FAILS(CTXSCRIBE_STATUS_AUDIO_TOO_LONG, "file", NULL,
                 ctxscribe_transcriber_transcribe(limited, NULL, wav, wav_len, &transcript,
                                                  &err));
    free(wav);
    /* The same through the PCM entry point. */
    EXPECT_FAILS(CTXSCRIBE_STATUS_AUDIO_TOO_LONG, "file", NULL,
                 ctxscribe_transcriber_transcribe_pcm(limited, NULL, jfk_pcm, jfk_pcm_len,
                                                      jfk_rate, &transcript, &err));
    EXPECT(transcript == NULL);
    ctxscribe_transcriber_free(limited);
}

static void test_timeout_is_deadline_exceeded(void) {
    ctxscribe_config *config = ctxscribe_config_new();
    ctxscribe_transcriber *hasty = NULL;
    ctxscribe_transcript *transcript = NULL;
    EXPECT_OK(ctxscribe_config_set_model_path(config, tiny_model, &err));
    EXPECT_OK(ctxscribe_config_set_threads(config, 1, &err));
    EXPECT_OK(ctxscribe_config_set_timeout_ms(config, 1, &err));
    EXPECT_OK(ctxscribe_transcriber_new(config, &hasty, &err));
    ctxscribe_config_free(config);
    EXPECT_FAILS(CTXSCRIBE_STATUS_DEADLINE_EXCEEDED, NULL, NULL,
                 ctxscribe_transcriber_transcribe(hasty, NULL, jfk_wav, jfk_wav_len,
                                                  &transcript, &err));
    EXPECT(transcript == NULL);
    ctxscribe_transcriber_free(hasty);
}

static void test_language_the_model_does_not_know(void) {
    ctxscribe_request *request = ctxscribe_request_new();
    ctxscribe_transcript *transcript = NULL;
    EXPECT_OK(ctxscribe_request_add_language(request, "de", &err));
    EXPECT_FAILS(CTXSCRIBE_STATUS_INVALID_REQUEST, "languages", "English-only",
                 ctxscribe_transcriber_transcribe(tiny, request, jfk_wav, jfk_wav_len,
                                                  &transcript, &err));
    EXPECT(transcript == NULL);
    ctxscribe_request_free(request);
}

static void test_multilingual_model_and_language_set(void) {
    size_t len = 0;
    unsigned char *german = read_file(german_path, &len);
    ctxscribe_transcriber *base = new_transcriber(base_model, 1);
    ctxscribe_request *request = ctxscribe_request_new();
    ctxscribe_transcript *transcript = NULL;
    EXPECT(german != NULL && base != NULL);
    EXPECT(ctxscribe_transcriber_is_multilingual(base));
    /* Built without a GPU backend: the engine runs on the CPU kernels, and says so. */
    EXPECT(base == NULL || strncmp(ctxscribe_transcriber_backend(base), "CPU (", 5) == 0);
    EXPECT_OK(ctxscribe_request_set_languages(request, "de,en", &err));
    if (german != NULL && base != NULL) {
        EXPECT_OK(ctxscribe_transcriber_transcribe(base, request, german, len, &transcript,
                                                   &err));
    }
    if (transcript != NULL) {
        const char *text = ctxscribe_transcript_text(transcript);
        EXPECT(same(ctxscribe_transcript_language(transcript), "de"));
        EXPECT(text != NULL && strlen(text) > 10);
        fprintf(stderr, "  de: %s\n", text);
    }
    ctxscribe_transcript_free(transcript);
    ctxscribe_request_free(request);
    ctxscribe_transcriber_free(base);
    free(german);
}

/* ---- several threads, one transcriber ------------------------------------------------ */

enum { THREADS = 4 };

struct job {
    const ctxscribe_request *request; /* shared by every thread, read only */
    int kind;                         /* 0: encoded wav, 1: PCM, 2: an error (flac) */
    ctxscribe_status status;
    char text[1024];
    char error_code[64];
};

static void *worker(void *arg) {
    struct job *job = arg;
    ctxscribe_transcript *transcript = NULL;
    ctxscribe_error *err = NULL;
    static const char not_audio[] = "fLaC not really";
    switch (job->kind) {
    case 0:
        job->status = ctxscribe_transcriber_transcribe(tiny, job->request, jfk_wav, jfk_wav_len,
                                                       &transcript, &err);
        break;
    case 1:
        job->status = ctxscribe_transcriber_transcribe_pcm(tiny, job->request, jfk_pcm,
                                                           jfk_pcm_len, jfk_rate, &transcript,
                                                           &err);
        break;
    default:
        job->status = ctxscribe_transcriber_transcribe(
            tiny, job->request, (const uint8_t *)not_audio, sizeof not_audio - 1, &transcript,
            &err);
        break;
    }
    if (transcript != NULL) {
        snprintf(job->text, sizeof job->text, "%s", ctxscribe_transcript_text(transcript));
    }
    if (err != NULL) {
        snprintf(job->error_code, sizeof job->error_code, "%s", ctxscribe_error_code(err));
    }
    ctxscribe_transcript_free(transcript);
    ctxscribe_error_free(err);
    return NULL;
}

static void test_threads_share_one_transcriber(void) {
    ctxscribe_request *request = ctxscribe_request_new();
    EXPECT_OK(ctxscribe_request_add_language(request, "en", &err));
    EXPECT_OK(ctxscribe_request_add_dictionary_term(request, "Americans", &err));

    /* What one thread alone gets, for each kind of input (greedy decoding is
     * deterministic for a given input and thread count). */
    struct job alone[2] = {{request, 0, 0, "", ""}, {request, 1, 0, "", ""}};
    worker(&alone[0]);
    worker(&alone[1]);
    EXPECT(alone[0].status == CTXSCRIBE_STATUS_OK && is_jfk(alone[0].text));
    EXPECT(alone[1].status == CTXSCRIBE_STATUS_OK && is_jfk(alone[1].text));

    struct job jobs[THREADS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (struct job){request, i % 3, 0, "", ""};
        EXPECT(pthread_create(&threads[i], NULL, worker, &jobs[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        EXPECT(pthread_join(threads[i], NULL) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        if (jobs[i].kind == 2) {
            EXPECT(jobs[i].status == CTXSCRIBE_STATUS_UNSUPPORTED_AUDIO_TYPE);
            EXPECT(same(jobs[i].error_code, "unsupported_audio_type"));
        } else {
            EXPECT(jobs[i].status == CTXSCRIBE_STATUS_OK);
            EXPECT(same(jobs[i].text, alone[jobs[i].kind].text));
        }
    }
    ctxscribe_request_free(request);
}

/* ---- main --------------------------------------------------------------------------- */

/* ---- run options: segment callback, cancel token, time limit --------------------------- */

/* What a segment callback saw. */
struct seen_segments {
    pthread_t caller;
    int calls;
    int other_thread;
    int stop_after; /* returns "stop" on this call (1-based); 0 never */
    double last_end;
    int backwards;
    char text[4096];
};

static int on_segment(double start, double end, const char *text, void *user_data) {
    struct seen_segments *seen = user_data;
    seen->calls++;
    if (!pthread_equal(pthread_self(), seen->caller)) {
        seen->other_thread++;
    }
    if (start < seen->last_end - 1e-6 || end < start) {
        seen->backwards++;
    }
    seen->last_end = end;
    if (seen->text[0] != '\0') {
        strncat(seen->text, " ", sizeof seen->text - strlen(seen->text) - 1);
    }
    strncat(seen->text, text, sizeof seen->text - strlen(seen->text) - 1);
    return seen->stop_after != 0 && seen->calls >= seen->stop_after;
}

/* jfk said six times in a row: about a minute of PCM, to stop in the middle of. */
static float *long_pcm(size_t *len) {
    *len = jfk_pcm_len * 6;
    float *pcm = malloc(*len * sizeof *pcm);
    for (size_t i = 0; pcm != NULL && i < 6; i++) {
        memcpy(pcm + i * jfk_pcm_len, jfk_pcm, jfk_pcm_len * sizeof *pcm);
    }
    return pcm;
}

static void test_segments_reach_the_callback_on_the_calling_thread(void) {
    ctxscribe_run_options *options = ctxscribe_run_options_new();
    ctxscribe_transcript *transcript = NULL;
    struct seen_segments seen = {.caller = pthread_self()};
    EXPECT_OK(ctxscribe_run_options_set_on_segment(options, on_segment, &seen, &err));
    EXPECT_OK(ctxscribe_transcriber_transcribe_with(tiny, NULL, options, jfk_wav, jfk_wav_len,
                                                    &transcript, &err));
    EXPECT(transcript != NULL && is_jfk(ctxscribe_transcript_text(transcript)));
    EXPECT(seen.calls >= 1 && seen.other_thread == 0 && seen.backwards == 0);
    EXPECT(transcript != NULL && same(seen.text, ctxscribe_transcript_text(transcript)));
    ctxscribe_transcript_free(transcript);
    transcript = NULL;

    /* A callback that says "stop" at its first segment: cancelled, called no more. */
    struct seen_segments stopping = {.caller = pthread_self(), .stop_after = 1};
    size_t len = 0;
    float *pcm = long_pcm(&len);
    EXPECT_OK(ctxscribe_run_options_set_on_segment(options, on_segment, &stopping, &err));
    EXPECT_FAILS(CTXSCRIBE_STATUS_CANCELLED, NULL, "cancelled",
                 ctxscribe_transcriber_transcribe_pcm_with(tiny, NULL, options, pcm, len,
                                                           jfk_rate, &transcript, &err));
    EXPECT(transcript == NULL && stopping.calls == 1);
    /* The PCM call with options and no callback transcribes. */
    EXPECT_OK(ctxscribe_run_options_set_on_segment(options, NULL, NULL, &err));
    EXPECT_OK(ctxscribe_transcriber_transcribe_pcm_with(tiny, NULL, options, jfk_pcm,
                                                        jfk_pcm_len, jfk_rate, &transcript,
                                                        &err));
    EXPECT(transcript != NULL && is_jfk(ctxscribe_transcript_text(transcript)));
    ctxscribe_transcript_free(transcript);
    free(pcm);
    ctxscribe_run_options_free(options);
}

struct delayed_cancel {
    const ctxscribe_cancel_token *token;
    double delay_secs;
};

static void *cancel_later(void *arg) {
    const struct delayed_cancel *job = arg;
    struct timespec pause = {.tv_sec = (time_t)job->delay_secs,
                             .tv_nsec = (long)((job->delay_secs - (double)(time_t)job->delay_secs) * 1e9)};
    nanosleep(&pause, NULL);
    ctxscribe_cancel_token_cancel(job->token);
    return NULL;
}

static void test_a_cancel_token_stops_a_call_from_another_thread(void) {
    size_t len = 0;
    float *pcm = long_pcm(&len);
    ctxscribe_transcript *transcript = NULL;
    double started = now_secs();
    EXPECT_OK(ctxscribe_transcriber_transcribe_pcm(tiny, NULL, pcm, len, jfk_rate, &transcript,
                                                   &err));
    double whole = now_secs() - started;
    ctxscribe_transcript_free(transcript);
    transcript = NULL;

    ctxscribe_cancel_token *token = ctxscribe_cancel_token_new();
    ctxscribe_run_options *options = ctxscribe_run_options_new();
    EXPECT_OK(ctxscribe_run_options_set_cancel_token(options, token, &err));
    struct delayed_cancel job = {token, whole / 10};
    pthread_t thread;
    EXPECT(pthread_create(&thread, NULL, cancel_later, &job) == 0);
    started = now_secs();
    EXPECT_FAILS(CTXSCRIBE_STATUS_CANCELLED, NULL, NULL,
                 ctxscribe_transcriber_transcribe_pcm_with(tiny, NULL, options, pcm, len,
                                                           jfk_rate, &transcript, &err));
    double stopped = now_secs() - started;
    EXPECT(pthread_join(thread, NULL) == 0);
    EXPECT(transcript == NULL && ctxscribe_cancel_token_is_cancelled(token));
    printf("     cancelled after %.2f s of a %.2f s run\n", stopped, whole);
    EXPECT(stopped < whole / 2);

    /* Cancelled before the call (and twice): it fails at once, with a callback too. */
    ctxscribe_cancel_token_cancel(token);
    struct seen_segments seen = {.caller = pthread_self()};
    EXPECT_OK(ctxscribe_run_options_set_on_segment(options, on_segment, &seen, &err));
    EXPECT_FAILS(CTXSCRIBE_STATUS_CANCELLED, NULL, NULL,
                 ctxscribe_transcriber_transcribe_with(tiny, NULL, options, jfk_wav,
                                                       jfk_wav_len, &transcript, &err));
    EXPECT(transcript == NULL && seen.calls == 0);
    /* The options keep the token: freeing it first is fine. A new token runs to the end
       and cancelling it afterwards changes nothing. */
    ctxscribe_cancel_token_free(token);
    EXPECT_FAILS(CTXSCRIBE_STATUS_CANCELLED, NULL, NULL,
                 ctxscribe_transcriber_transcribe_with(tiny, NULL, options, jfk_wav,
                                                       jfk_wav_len, &transcript, &err));
    token = ctxscribe_cancel_token_new();
    EXPECT_OK(ctxscribe_run_options_set_cancel_token(options, token, &err));
    EXPECT_OK(ctxscribe_transcriber_transcribe_with(tiny, NULL, options, jfk_wav, jfk_wav_len,
                                                    &transcript, &err));
    ctxscribe_cancel_token_cancel(token);
    EXPECT(transcript != NULL && is_jfk(ctxscribe_transcript_text(transcript)));
    ctxscribe_transcript_free(transcript);
    transcript = NULL;

    /* A time limit of the options: deadline_exceeded. */
    EXPECT_OK(ctxscribe_run_options_set_cancel_token(options, NULL, &err));
    EXPECT_OK(ctxscribe_run_options_set_timeout_ms(options, 1, &err));
    EXPECT_FAILS(CTXSCRIBE_STATUS_DEADLINE_EXCEEDED, NULL, NULL,
                 ctxscribe_transcriber_transcribe_pcm_with(tiny, NULL, options, pcm, len,
                                                           jfk_rate, &transcript, &err));
    EXPECT(transcript == NULL);

    /* NULL rules. */
    EXPECT_FAILS(CTXSCRIBE_STATUS_NULL_ARGUMENT, "options", NULL,
                 ctxscribe_run_options_set_timeout_ms(NULL, 5, &err));
    EXPECT_FAILS(CTXSCRIBE_STATUS_NULL_ARGUMENT, "options", NULL,
                 ctxscribe_run_options_set_cancel_token(NULL, token, &err));
    EXPECT_FAILS(CTXSCRIBE_STATUS_NULL_ARGUMENT, "options", NULL,
                 ctxscribe_run_options_set_on_segment(NULL, on_segment, NULL, &err));
    ctxscribe_cancel_token_cancel(NULL);
    EXPECT(!ctxscribe_cancel_token_is_cancelled(NULL));
    ctxscribe_cancel_token_free(NULL);
    ctxscribe_run_options_free(NULL);
    ctxscribe_cancel_token_free(token);
    ctxscribe_run_options_free(options);
    free(pcm);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr,
                "usage: test_ctxscribe TINY_EN_MODEL BASE_MODEL JFK_WAV FLAC_FILE "
                "GERMAN_WAV\n");
        return 2;
    }
    tiny_model = argv[1];
    base_model = argv[2];
    jfk_path = argv[3];
    flac_path = argv[4];
    german_path = argv[5];
    jfk_wav = read_file(jfk_path, &jfk_wav_len);
    if (jfk_wav == NULL) {
        return 2;
    }
    jfk_pcm = wav_to_pcm(jfk_wav, jfk_wav_len, &jfk_pcm_len, &jfk_rate);

    static const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"version_and_status_codes", test_version_and_status_codes},
        {"free_null_is_a_no_op", test_free_null_is_a_no_op},
        {"null_arguments", test_null_arguments},
        {"config_errors", test_config_errors},
        {"model_unavailable", test_model_unavailable},
        {"request_validation", test_request_validation},
        {"transcribe_real_audio", test_transcribe_real_audio},
        {"transcribe_pcm", test_transcribe_pcm},
        {"unsupported_audio", test_unsupported_audio},
        {"audio_decode_failed", test_audio_decode_failed},
        {"truncated_audio_warns", test_truncated_audio_warns},
        {"limits", test_limits},
        {"timeout_is_deadline_exceeded", test_timeout_is_deadline_exceeded},
        {"language_the_model_does_not_know", test_language_the_model_does_not_know},
        {"threads_share_one_transcriber", test_threads_share_one_transcriber},
        {"multilingual_model_and_language_set", test_multilingual_model_and_language_set},
        {"segments_reach_the_callback_on_the_calling_thread",
         test_segments_reach_the_callback_on_the_calling_thread},
        {"a_cancel_token_stops_a_call_from_another_thread",
         test_a_cancel_token_stops_a_call_from_another_thread},
    };
    int passed = 0, failed = 0;

    current_test = "setup";
    tiny = new_transcriber(tiny_model, 1);
    if (tiny == NULL || current_failures > 0) {
        fprintf(stderr, "cannot load %s\n", tiny_model);
        return 1;
    }
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        current_test = tests[i].name;
        current_failures = 0;
        double started = now_secs();
        tests[i].run();
        printf("%s %s (%.1f s)\n", current_failures == 0 ? "ok  " : "FAIL", tests[i].name,
               now_secs() - started);
        fflush(stdout);
        if (current_failures == 0) {
            passed++;
        } else {
            failed++;
        }
    }
    ctxscribe_transcriber_free(tiny);
    free(jfk_pcm);
    free(jfk_wav);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
