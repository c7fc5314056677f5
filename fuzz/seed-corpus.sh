#!/usr/bin/env bash
# Seeds the fuzz corpora (fuzz/corpus/<target>/) from the test fixtures. Idempotent; the
# corpora are not committed (fuzz/.gitignore): libFuzzer adds what it finds to them.
#
#   usage: fuzz/seed-corpus.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
AUDIO=$ROOT/target/fixtures/audio
bash "$ROOT/tests/fixtures/make-fixtures.sh" "$AUDIO" >/dev/null
CORPUS=$HERE/corpus
mkdir -p "$CORPUS/audio_ingest" "$CORPUS/context_fields" "$CORPUS/multipart_form"

# Audio: the first 64 KiB of every fixture (ok, bad, unsupported, long, bomb): enough for
# every container's headers and the first packets; libFuzzer mutates from there.
for f in "$AUDIO"/*; do
    [ -f "$f" ] || continue
    head -c 65536 "$f" >"$CORPUS/audio_ingest/seed_$(basename "$f")"
done

# Context fields: one selector byte (0 messages, 1 languages, 2 dictionary) + the text.
seed_field() { # NAME SELECTOR TEXT
    { printf "\\x$(printf %02x "$2")"; printf '%s' "$3"; } >"$CORPUS/context_fields/seed_$1"
}
seed_field messages_ok 0 '[{"role":"system","content":"Kubernetes notes."},{"role":"user","content":"kubectl apply"}]'
seed_field messages_parts 0 '[{"role":"user","content":[{"type":"text","text":"helm chart"}]}]'
seed_field messages_bad 0 '[{"role":"assistant","content":"x"}]'
seed_field messages_deep 0 '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]'
seed_field languages_one 1 'de'
seed_field languages_list 1 'de, en,fr'
seed_field languages_json 1 '["de","en"]'
seed_field languages_auto 1 'auto'
seed_field languages_string 1 '"de"'
seed_field dictionary_list 2 'kubectl, Helm, Grafana'
seed_field dictionary_json 2 '["kubectl","Helm","Straße","東京"]'
seed_field dictionary_bad 2 '[1, {"term": "x"}]'

# Multipart bodies: one mode byte (0: whole body; >=128: in chunks) + the body, with the
# boundary the target uses.
B=ctxscribe-fuzz
part() { # NAME VALUE
    printf -- '--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' "$B" "$1" "$2"
}
file_part() { # PATH (first 4 KiB)
    printf -- '--%s\r\nContent-Disposition: form-data; name="file"; filename="a"\r\nContent-Type: application/octet-stream\r\n\r\n' "$B"
    head -c 4096 "$1"
    printf '\r\n'
}
{
    printf '\x00'
    file_part "$AUDIO/ok_wav_s16_16k_mono.wav"
    part messages '[{"role":"user","content":"kubectl"}]'
    part languages 'de,en'
    part dictionary 'Helm, Grafana'
    part prompt 'Earlier: the cluster.'
    part response_format json
    printf -- '--%s--\r\n' "$B"
} >"$CORPUS/multipart_form/seed_full"
{
    printf '\x85'
    part 'dictionary[]' kubectl
    part 'dictionary[]' Helm
    part 'languages[]' de
    part 'messages[][role]' user
    part 'messages[][content]' hello
    file_part "$AUDIO/ok_webm_opus.webm"
    printf -- '--%s--\r\n' "$B"
} >"$CORPUS/multipart_form/seed_bracketed"
{
    printf '\x00'
    file_part "$AUDIO/ok_mp3_cbr_128k.mp3"
    file_part "$AUDIO/ok_ogg_opus.ogg"
    printf -- '--%s--\r\n' "$B"
} >"$CORPUS/multipart_form/seed_two_files"
echo "seeded $(ls "$CORPUS"/* | wc -l) corpus files in $CORPUS"
