#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build, test and benchmark mantissa.
# Debian packages only. Safe to run again: it installs only what is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libhwy-dev nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev
  libgtest-dev googletest libbenchmark-dev
  python3 python3-torch python3-numpy
  python3-torchvision  # model shapes for bench/lists (scripts/bench_lists.py --write-lists)
  python3-sklearn      # the digits set mantissa train uses by default (digits.csv.gz)
  pybind11-dev python3-pybind11 python3-pytest python3-dev  # the Python module (python/)
  clang libclang-rt-14-dev  # the libFuzzer targets (fuzz/, scripts/fuzz.sh)
  libdnnl-dev               # oneDNN, the peer of scripts/bench_stable_kernels.py
  openmpi-bin libopenmpi-dev  # MPI for `mantissa train --distributed` (data-parallel)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
