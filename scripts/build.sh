#!/usr/bin/env bash
# Configures and builds mantissa in BUILD_DIR (default: build). Extra arguments go to cmake.
# BUILD_TARGETS (space-separated) builds only those targets.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "$@"
# shellcheck disable=SC2086  # BUILD_TARGETS is a list
cmake --build "$build_dir" -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
