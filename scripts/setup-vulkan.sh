#!/usr/bin/env bash
# What a Vulkan build of the engine needs on Debian 12, and Mesa's CPU Vulkan driver
# (lavapipe) to run it without a GPU (`make test-vulkan`; idempotent):
#   - Debian packages: the Vulkan loader (libvulkan-dev), glslc (ggml compiles its
#     shaders at build time), mesa-vulkan-drivers (lavapipe), vulkan-tools (vulkaninfo);
#   - newer Vulkan headers: ggml's Vulkan backend uses VK_EXT_layer_settings (headers
#     1.3.261+), Debian 12 has 1.3.239. Debian 13's libvulkan-dev (headers only, pinned
#     below by SHA-256) is fetched with apt-get from Debian's archive and unpacked into
#     target/vulkan-sdk, beside a link to the system's loader; `VULKAN_SDK` pointing
#     there makes CMake's FindVulkan take them. Nothing is installed from it.
# Prints the directory to use as VULKAN_SDK.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SDK="$ROOT/target/vulkan-sdk"
DEB=libvulkan-dev_1.4.309.0-1_amd64.deb
DEB_SHA256=8d329d465e16168afff58b1bd0dd6db46aac2cc3f56054a481b25a04e90b345a

APT_PACKAGES=(libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools)
source "$ROOT/scripts/apt-install.sh"
apt_install_missing setup-vulkan "${APT_PACKAGES[@]}"

if [ ! -f "$SDK/include/vulkan/vulkan.hpp" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
    > "$work/sources.list"
  apt_options=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
  echo "setup-vulkan: fetching Debian 13's Vulkan headers ($DEB)" >&2
  apt-get "${apt_options[@]}" update -qq
  (cd "$work" && apt-get "${apt_options[@]}" download -qq "libvulkan-dev=1.4.309.0-1")
  echo "$DEB_SHA256  $work/$DEB" | sha256sum --check --quiet
  dpkg-deb -x "$work/$DEB" "$work/x"
  rm -rf "$SDK" && mkdir -p "$SDK/lib"
  cp -r "$work/x/usr/include" "$SDK/include"
fi
# (awk reads to the end: an early exit would fail ldconfig's write under pipefail)
loader=$(ldconfig -p | awk '/libvulkan\.so\.1 .*x86-64/ && !found {found = $NF} END {print found}')
if [ -z "$loader" ]; then
  echo "setup-vulkan: no Vulkan loader (libvulkan.so.1) on this system" >&2
  exit 1
fi
mkdir -p "$SDK/lib"
ln -sfn "$loader" "$SDK/lib/libvulkan.so"
echo "$SDK"
