#!/usr/bin/env bash
# Installs what `make test` and `make demo` need and this machine lacks:
# Debian packages (only those absent, with one apt-get call) and Go modules.
# Go itself and gcc are assumed, as on a fresh Debian 12 developer machine.
set -euo pipefail

# Debian packages bitvk's build and tests use, beyond Go and gcc:
# the Vulkan loader (opened at run time; the Vulkan headers cgo compiles against are in
# third_party/vulkan-headers, so no libvulkan-dev), Mesa's lavapipe (the software Vulkan device the
# tests run on), glslang and spirv-tools (make shaders, spirv-val), the Khronos validation
# layer (on in tests), Chromium for the web page's browser test, and bible-kjv: the King
# James Bible, the public-domain text `make corpus` turns into the tokenizer's and the
# demo model's training and validation text (scripts/corpus.sh). bitvk view's window is GLFW
# (github.com/go-gl/glfw, compiled by cgo), which needs the X11 headers and libGL to build;
# its test draws into Xvfb (xvfb-run, with xauth).
APT_PACKAGES=(libvulkan1 mesa-vulkan-drivers glslang-tools spirv-tools vulkan-validationlayers chromium bible-kjv
	libx11-dev libxcursor-dev libxrandr-dev libxinerama-dev libxi-dev libxxf86vm-dev libgl-dev xvfb xauth)

if ! command -v go >/dev/null 2>&1; then
	echo "deps: Go is not installed: install Go 1.26 or newer from go.dev/dl and put it on PATH" >&2
	exit 1
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}" >&2
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

go mod download
