/*
 * transcribe: transcribe one audio file with ctxscribe's C API.
 *
 *   transcribe MODEL FILE [--dict TERM,TERM...] [--lang CODE[,CODE...]] [--context TEXT]
 *
 * MODEL is a whisper.cpp ggml model (e.g. models/ggml-base.bin; "-" for the default
 * model), FILE a wav, webm, mp3, m4a or ogg file. Prints the transcript on stdout and
 * the detected language on stderr. Exit status: 0 on success, 1 when ctxscribe reports
 * an error (printed as "transcribe: CODE: MESSAGE"), 2 for a usage or I/O error.
 *
 * Build (after `cargo build --release -p ctxscribe-ffi`), see README.md "C quickstart":
 *   cc -std=c11 -Wall -Wextra -Iinclude examples/c/transcribe.c \
 *      -Ltarget/release -lctxscribe_ffi -Wl,-rpath,"$PWD/target/release" -o transcribe
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctxscribe.h"

static void usage(void) {
    fprintf(stderr,
            "usage: transcribe MODEL FILE [--dict TERM,TERM...] [--lang CODE[,CODE...]]"
            " [--context TEXT]\n"
            "  MODEL  whisper.cpp ggml model file, or - for the default model\n"
            "  FILE   wav, webm, mp3, m4a or ogg audio\n");
}

/* Reads a whole file into a malloc'ed buffer; returns NULL (and says why) on failure. */
static unsigned char *read_file(const char *path, size_t *len) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        perror(path);
        return NULL;
    }
    size_t cap = 1 << 16, used = 0;
    unsigned char *data = malloc(cap);
    while (data != NULL) {
        used += fread(data + used, 1, cap - used, file);
        if (used < cap) {
            break;
        }
        unsigned char *bigger = realloc(data, cap * 2);
        if (bigger == NULL) {
            free(data);
            data = NULL;
            break;
        }
        data = bigger;
        cap *= 2;
    }
    if (data == NULL || ferror(file)) {
        fprintf(stderr, "%s: cannot read the file\n", path);
        free(data);
        data = NULL;
    }
    fclose(file);
    *len = used;
    return data;
}

/* Prints a failed call's error, frees it and returns 1. */
static int report(ctxscribe_status status, ctxscribe_error *err) {
    fprintf(stderr, "transcribe: %s: %s\n", ctxscribe_status_code(status),
            err != NULL ? ctxscribe_error_message(err) : "(no details)");
    ctxscribe_error_free(err);
    return 1;
}

/* Calls add(request, item) for each item of a comma-separated list. */
typedef ctxscribe_status (*add_fn)(ctxscribe_request *, const char *, ctxscribe_error **);
static ctxscribe_status add_each(ctxscribe_request *request, const char *list, add_fn add,
                                 ctxscribe_error **err) {
    char *copy = malloc(strlen(list) + 1);
    if (copy == NULL) {
        fprintf(stderr, "transcribe: out of memory\n");
        exit(2);
    }
    strcpy(copy, list);
    ctxscribe_status status = CTXSCRIBE_STATUS_OK;
    for (char *item = copy, *comma; status == CTXSCRIBE_STATUS_OK; item = comma + 1) {
        comma = strchr(item, ',');
        if (comma != NULL) {
            *comma = '\0';
        }
        status = add(request, item, err);
        if (comma == NULL) {
            break;
        }
    }
    free(copy);
    return status;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        usage();
        return 2;
    }
    const char *model = argv[1], *path = argv[2];
    const char *dict = NULL, *lang = NULL, *context = NULL;
    for (int i = 3; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--dict") == 0) {
            dict = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--lang") == 0) {
            lang = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--context") == 0) {
            context = argv[++i];
        } else {
            usage();
            return 2;
        }
    }

    size_t audio_len = 0;
    unsigned char *audio = read_file(path, &audio_len);
    if (audio == NULL) {
        return 2;
    }

    int exit_code = 1;
    ctxscribe_error *err = NULL;
    ctxscribe_status status = CTXSCRIBE_STATUS_OK;
    ctxscribe_config *config = ctxscribe_config_new();
    ctxscribe_request *request = ctxscribe_request_new();
    ctxscribe_transcriber *transcriber = NULL;
    ctxscribe_transcript *transcript = NULL;

    /* The request first: a bad --lang or --dict fails before the model is loaded. */
    if (context != NULL) {
        status = ctxscribe_request_add_message(request, CTXSCRIBE_ROLE_USER, context, &err);
    }
    if (status == CTXSCRIBE_STATUS_OK && lang != NULL) {
        status = add_each(request, lang, ctxscribe_request_add_language, &err);
    }
    if (status == CTXSCRIBE_STATUS_OK && dict != NULL) {
        status = add_each(request, dict, ctxscribe_request_add_dictionary_term, &err);
    }
    if (status == CTXSCRIBE_STATUS_OK && strcmp(model, "-") != 0) {
        status = ctxscribe_config_set_model_path(config, model, &err);
    }
    if (status == CTXSCRIBE_STATUS_OK) {
        /* Loads the model once; a real program keeps the transcriber and shares it. */
        status = ctxscribe_transcriber_new(config, &transcriber, &err);
    }
    if (status == CTXSCRIBE_STATUS_OK) {
        status = ctxscribe_transcriber_transcribe(transcriber, request, audio, audio_len,
                                                  &transcript, &err);
    }
    if (status == CTXSCRIBE_STATUS_OK) {
        const char *language = ctxscribe_transcript_language(transcript);
        printf("%s\n", ctxscribe_transcript_text(transcript));
        fprintf(stderr, "[%s, %.1f s of audio in %.2f s]\n",
                language != NULL ? language : "no speech",
                ctxscribe_transcript_audio_secs(transcript),
                ctxscribe_transcript_processing_secs(transcript));
        exit_code = 0;
    } else {
        exit_code = report(status, err);
    }

    ctxscribe_transcript_free(transcript);
    ctxscribe_transcriber_free(transcriber);
    ctxscribe_request_free(request);
    ctxscribe_config_free(config);
    free(audio);
    return exit_code;
}
