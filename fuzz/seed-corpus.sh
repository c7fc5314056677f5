#!/usr/bin/env bash
# Seeds the fuzz corpora (fuzz/corpus/<target>/). Idempotent; the corpora are not committed
# (fuzz/.gitignore): libFuzzer adds what it finds to them, fuzz/minimize.sh merges them
# back down.
#
#   usage: fuzz/seed-corpus.sh
#
# audio_ingest gets small valid files (half a second of the speech clip) of every family
# and codec, so that one execution takes about a millisecond, not the tens of
# milliseconds a whole fixture takes; plus the first 4 KiB of every test fixture (the
# unsupported families, the damaged files, the hostile files), for the probe and the
# container headers; and the inputs of ../shared/fuzz that once made a decoder panic.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
AUDIO=$ROOT/target/fixtures/audio
HOSTILE=$ROOT/target/fixtures/hostile
SEEDS=$ROOT/target/fixtures/fuzz-seeds
bash "$ROOT/tests/fixtures/make-fixtures.sh" "$AUDIO" >/dev/null
bash "$ROOT/tests/fixtures/make-hostile.sh" "$HOSTILE" >/dev/null
CORPUS=$HERE/corpus
mkdir -p "$CORPUS/audio_ingest" "$CORPUS/context_fields" "$CORPUS/multipart_form" "$SEEDS"

# Small valid files: 0.5 s from the middle of the clip, every family and codec we decode.
SEEDS_VERSION=1
if [ ! -f "$SEEDS/.complete-v$SEEDS_VERSION" ]; then
    rm -f "$SEEDS"/*
    SRC=$AUDIO/ok_wav_s16_16k_mono.wav
    seed() { # NAME [ffmpeg output options...]
        local name=$1; shift
        ffmpeg -nostdin -hide_banner -loglevel error -y -ss 2 -t 0.5 -i "$SRC" \
            -map_metadata -1 "$@" "$SEEDS/$name"
    }
    seed wav_s16_8k.wav -ar 8000 -c:a pcm_s16le
    seed wav_u8_8k.wav -ar 8000 -c:a pcm_u8
    seed wav_f32_8k_stereo.wav -ar 8000 -ac 2 -c:a pcm_f32le
    seed wav_s24_11k.wav -ar 11025 -c:a pcm_s24le
    seed wav_mulaw_8k.wav -ar 8000 -c:a pcm_mulaw
    seed wav_alaw_8k.wav -ar 8000 -c:a pcm_alaw
    seed wav_adpcm_ima.wav -ar 16000 -c:a adpcm_ima_wav -block_size 256
    seed wav_adpcm_ms.wav -ar 16000 -c:a adpcm_ms -block_size 256
    seed mp3_cbr_32k.mp3 -c:a libmp3lame -b:a 32k -id3v2_version 4 -metadata title=seed
    seed mp3_vbr_22k_stereo.mp3 -ar 22050 -ac 2 -c:a libmp3lame -q:a 6
    seed mp3_8k.mp3 -ar 8000 -c:a libmp3lame -b:a 8k
    seed m4a_aac.m4a -c:a aac -b:a 24k
    seed m4a_aac_faststart.m4a -c:a aac -b:a 24k -movflags +faststart
    seed m4a_aac_fragmented.m4a -c:a aac -b:a 24k \
        -movflags frag_keyframe+empty_moov+default_base_moof
    seed ogg_vorbis.ogg -c:a libvorbis -q:a 0
    seed ogg_opus.ogg -c:a libopus -b:a 12k
    seed ogg_opus_stereo_celt.ogg -ac 2 -ar 48000 -c:a libopus -b:a 32k -application lowdelay
    seed webm_opus.webm -c:a libopus -b:a 12k -f webm
    seed webm_opus_live.webm -c:a libopus -b:a 12k -f webm -live 1 -cluster_time_limit 100
    seed webm_vorbis.webm -c:a libvorbis -q:a 0 -f webm
    seed mka_opus.mka -c:a libopus -b:a 12k -f matroska
    seed mka_pcm_s16.mka -ar 8000 -c:a pcm_s16le -f matroska
    # Chained Ogg: two links with different rates.
    seed link_a.ogg -ar 16000 -c:a libvorbis -q:a 0
    seed link_b.ogg -ar 8000 -c:a libvorbis -q:a 0
    cat "$SEEDS/link_a.ogg" "$SEEDS/link_b.ogg" >"$SEEDS/ogg_vorbis_chained.ogg"
    rm -f "$SEEDS/link_a.ogg" "$SEEDS/link_b.ogg"
    touch "$SEEDS/.complete-v$SEEDS_VERSION"
fi
for f in "$SEEDS"/*; do
    cp "$f" "$CORPUS/audio_ingest/seed_$(basename "$f")"
done
for f in "$AUDIO"/* "$HOSTILE"/*; do
    [ -f "$f" ] || continue
    head -c 4096 "$f" >"$CORPUS/audio_ingest/head_$(basename "$f")"
done
# Inputs that once broke the target (../shared/fuzz), whole: regressions stay covered.
SHARED=${CTXSCRIBE_SHARED:-"$ROOT/../shared"}
for f in "$SHARED"/fuzz/*; do
    case "$f" in *.md | *.txt) continue ;; esac
    [ -f "$f" ] && cp "$f" "$CORPUS/audio_ingest/found_$(basename "$f")"
done

# Context fields: one selector byte (0 messages, 1 languages, 2 dictionary, 3 sounds_like)
# + the text.
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
seed_field sounds_like_ok 3 '{"Nguyen":["win","nuh win"],"Xóchitl":["so chee"]}'
seed_field sounds_like_spoof 3 '{"Nguyen":["the","for you"],"Siobhan":["shiv-awn","O’Brien"]}'
seed_field sounds_like_bad 3 '{"Nguyen":"win","K8s":["k 8 s"]}'

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
