#!/usr/bin/env bash
# Builds the C ABI and runs the C and C++ tests against include/ctxscribe.h:
#   - the header compiles alone as C11 and as C++11 (-Wall -Wextra -Werror -pedantic);
#   - ffi/tests/c/test_ctxscribe.c, linked with the static library, every call and error
#     status on real audio and real models, several threads sharing one transcriber;
#   - ffi/tests/c/header_test.cpp, a C++ program using the header, linked statically;
#   - examples/c/transcribe.c, linked with the shared library, run as a CLI;
#   - a deliberate leak that LeakSanitizer must catch (the suppressions hide no C object).
# Everything C is compiled with -std=c11 -Wall -Wextra -Werror -pedantic and
# AddressSanitizer (+ LeakSanitizer) and UndefinedBehaviorSanitizer.
#
# Needs the models of `make setup` (ggml-tiny.en.bin, ggml-base.bin, the Silero VAD) and
# ../shared/eval/real. Ends with one line "N passed, M failed"; exits non-zero on any
# failure.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
SHARED=${CTXSCRIBE_SHARED:-"$ROOT/../shared"}
MODELS=${CTXSCRIBE_MODEL_DIR:-"$ROOT/models"}
export CTXSCRIBE_MODEL_DIR=$MODELS  # the library never looks into the checkout by itself
TARGET=${CARGO_TARGET_DIR:-"$ROOT/target"}
LIBDIR=$TARGET/release
OUT=$TARGET/c-tests
CC=${CC:-cc}
CXX=${CXX:-c++}

TINY=$MODELS/ggml-tiny.en.bin
BASE=$MODELS/ggml-base.bin
FLAC=$SHARED/eval/real/en_ls_2412-153948-0000.flac
for f in "$TINY" "$BASE" "$MODELS/silero-v6.2.0-ggml.bin" "$FLAC"; do
  [ -f "$f" ] || { echo "run-c-tests: $f is missing; run \`make setup\` first" >&2; exit 1; }
done

echo "run-c-tests: building ctxscribe-ffi (release)"
cargo build --release -p ctxscribe-ffi
bash scripts/prepare-eval.sh "$TARGET/fixtures/real" >/dev/null
JFK=$TARGET/fixtures/real/en_whisper_jfk.wav
GERMAN=$TARGET/fixtures/real/de_picovoice.wav

mkdir -p "$OUT"
WARN=(-Wall -Wextra -Werror -pedantic)
SAN=(-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all)
# What `cargo rustc -p ctxscribe-ffi --crate-type staticlib -- --print native-static-libs`
# prints on Linux, plus -lgomp: whisper.cpp is C++ built with OpenMP (see Cargo.toml).
STATIC_LIBS=("$LIBDIR/libctxscribe_ffi.a" -lstdc++ -lgomp -lgcc_s -lutil -lrt -lpthread -lm -ldl)
SHARED_LIBS=(-L"$LIBDIR" -lctxscribe_ffi -Wl,-rpath,"$LIBDIR")

# ASan: report every error and fail. LeakSanitizer stays on: it checks that every object
# the tests own is freed. The suppressions cover only process-wide state that the engine
# keeps on purpose until exit (see the file).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export LSAN_OPTIONS=suppressions=$ROOT/ffi/tests/c/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
# step NAME CMD...: one test that passes when CMD succeeds.
step() {
  local name=$1; shift
  if "$@" >"$OUT/$name.log" 2>&1; then pass "$name"; else fail "$name"; sed 's/^/    /' "$OUT/$name.log"; fi
}

step header_compiles_as_c11 "$CC" -std=c11 "${WARN[@]}" -fsyntax-only -x c include/ctxscribe.h
step header_compiles_as_cxx11 "$CXX" -std=c++11 "${WARN[@]}" -fsyntax-only -x c++ include/ctxscribe.h
if command -v clang >/dev/null; then
  step header_compiles_with_clang clang -std=c11 "${WARN[@]}" -fsyntax-only -x c include/ctxscribe.h
fi

step build_c_tests "$CC" -std=c11 "${WARN[@]}" "${SAN[@]}" -Iinclude \
  ffi/tests/c/test_ctxscribe.c "${STATIC_LIBS[@]}" -o "$OUT/test_ctxscribe"
step build_cxx_test "$CXX" -std=c++11 "${WARN[@]}" "${SAN[@]}" -Iinclude \
  ffi/tests/c/header_test.cpp "${STATIC_LIBS[@]}" -o "$OUT/header_test"
step build_example "$CC" -std=c11 "${WARN[@]}" "${SAN[@]}" -Iinclude \
  examples/c/transcribe.c "${SHARED_LIBS[@]}" -o "$OUT/transcribe"
step build_leak_check "$CC" -std=c11 "${WARN[@]}" "${SAN[@]}" -Iinclude \
  ffi/tests/c/leak_check.c "${STATIC_LIBS[@]}" -o "$OUT/leak_check"

# The C tests report their own count.
if [ -x "$OUT/test_ctxscribe" ]; then
  echo "run-c-tests: test_ctxscribe"
  set +e
  "$OUT/test_ctxscribe" "$TINY" "$BASE" "$JFK" "$FLAC" "$GERMAN" 2>&1 | tee "$OUT/test_ctxscribe.log"
  code=${PIPESTATUS[0]}
  set -e
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$OUT/test_ctxscribe.log" | tail -1 || true)
  if [ -n "$summary" ]; then
    passed=$((passed + $(echo "$summary" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$summary" | cut -d' ' -f3)))
  fi
  if [ "$code" -ne 0 ] && { [ -z "$summary" ] || [ "$(echo "$summary" | cut -d' ' -f3)" = 0 ]; }; then
    fail "test_ctxscribe exited with $code (a sanitizer report or a crash, see above)"
  fi
fi

[ -x "$OUT/header_test" ] && step cxx_program_uses_the_header "$OUT/header_test"

# The example CLI, linked with the shared library.
cli_ok() { # EXPECTED_STDOUT ARGS...: exit 0 and stdout contains the words
  local want=$1; shift
  "$OUT/transcribe" "$@" >"$OUT/cli.out" && tr 'A-Z' 'a-z' <"$OUT/cli.out" | tr -d ',.' | grep -q "$want"
}
cli_fails() { # EXIT STDERR_TEXT ARGS...
  local want_code=$1 want_text=$2; shift 2
  local code=0
  "$OUT/transcribe" "$@" 2>"$OUT/cli.err" || code=$?
  cat "$OUT/cli.err"
  [ "$code" -eq "$want_code" ] && grep -q -- "$want_text" "$OUT/cli.err"
}
if [ -x "$OUT/transcribe" ]; then
  step cli_transcribes_with_context cli_ok "ask not what your country can do for you" \
    "$TINY" "$JFK" --dict "Americans,country" --lang en --context "Inaugural address, 1961."
  step cli_rejects_an_unknown_language cli_fails 1 "transcribe: invalid_request: .*languages\[1\]" \
    "$TINY" "$JFK" --lang en,xx
  step cli_rejects_flac cli_fails 1 "transcribe: unsupported_audio_type" "$TINY" "$FLAC"
  step cli_reports_a_missing_model cli_fails 1 "transcribe: model_unavailable" \
    /nonexistent/ggml-model.bin "$JFK"
  step cli_prints_usage cli_fails 2 "usage: transcribe MODEL FILE" "$TINY"
fi

# A C host that finds the library through an install prefix, not the source tree:
# `make install PREFIX=...`, then the example built with pkg-config (shared and static)
# and with CMake's find_package, each run on jfk. A prefix under a regular file fails
# with a clear message before anything is built.
PREFIX_DIR=$OUT/prefix
rm -rf "$PREFIX_DIR" "$OUT/cmake-build"
installed_ok() { # BINARY: transcribes jfk
  "$1" "$TINY" "$JFK" >"$OUT/installed.out" && cat "$OUT/installed.out" \
    && tr 'A-Z' 'a-z' <"$OUT/installed.out" | grep -q "ask not what your country"
}
step make_install make install PREFIX="$PREFIX_DIR"
export PKG_CONFIG_PATH=$PREFIX_DIR/lib/pkgconfig
pkg_shared() {
  # shellcheck disable=SC2046
  "$CC" -std=c11 "${WARN[@]}" examples/c/transcribe.c $(pkg-config --cflags --libs ctxscribe) \
    -Wl,-rpath,"$PREFIX_DIR/lib" -o "$OUT/transcribe_pkg" && installed_ok "$OUT/transcribe_pkg"
}
pkg_static() {
  # shellcheck disable=SC2046
  "$CC" -std=c11 "${WARN[@]}" examples/c/transcribe.c $(pkg-config --cflags ctxscribe) \
    "$PREFIX_DIR/lib/libctxscribe.a" $(pkg-config --static --libs-only-l ctxscribe | sed 's/-lctxscribe //') \
    -o "$OUT/transcribe_pkg_static" && installed_ok "$OUT/transcribe_pkg_static"
}
cmake_package() {
  cmake -S examples/c -B "$OUT/cmake-build" -DCMAKE_PREFIX_PATH="$PREFIX_DIR" \
    -DCMAKE_BUILD_RPATH="$PREFIX_DIR/lib" >/dev/null && cmake --build "$OUT/cmake-build" >/dev/null \
    && installed_ok "$OUT/cmake-build/transcribe" && installed_ok "$OUT/cmake-build/transcribe_static"
}
bad_prefix_is_refused() {
  local code=0
  touch "$OUT/a-file"
  bash scripts/install-c.sh "$OUT/a-file/prefix" 2>"$OUT/install.err" || code=$?
  cat "$OUT/install.err"
  [ "$code" -eq 1 ] && grep -q "cannot install into $OUT/a-file/prefix: $OUT/a-file is not a directory" "$OUT/install.err"
}
step pkg_config_shared_from_the_prefix pkg_shared
step pkg_config_static_from_the_prefix pkg_static
step cmake_find_package_from_the_prefix cmake_package
step install_refuses_a_prefix_it_cannot_write bad_prefix_is_refused
unset PKG_CONFIG_PATH

# LeakSanitizer must catch an error object the caller forgot to free.
leak_is_caught() {
  local code=0
  "$OUT/leak_check" >"$OUT/leak_check.out" 2>&1 || code=$?
  cat "$OUT/leak_check.out"
  [ "$code" -ne 0 ] && grep -q "LeakSanitizer: detected memory leaks" "$OUT/leak_check.out" \
    && grep -q "ctxscribe" "$OUT/leak_check.out"
}
[ -x "$OUT/leak_check" ] && step leak_sanitizer_catches_a_forgotten_free leak_is_caught

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
