#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks, by group. Debian packages only. Safe to run
# again: it installs only what is missing.
#   bash scripts/install-deps.sh [GROUP...]     (default: main)
#   main   build the library and the tool, run the main job (scripts/run.sh)
#   test   what the test suite adds (scripts/test.sh): GoogleTest, Google Benchmark (built with
#          -Werror), Python module and its pytest suite with PyTorch as the reference, clang for
#          the fuzzers, lld (faster links), Open MPI for the data-parallel tests
#   bench  what the benchmarks' peers add: oneDNN, OpenBLAS, torchvision's model shapes
#   all    every group
set -euo pipefail

main=(
  build-essential cmake ninja-build pkg-config
  libhwy-dev nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev
  python3-sklearn  # the digits set mantissa train uses by default (digits.csv.gz)
  fortunes         # the text mantissa train --model gpt uses by default (/usr/share/games/fortunes)
)
test=(
  git python3 python3-numpy
  libgtest-dev googletest libbenchmark-dev
  python3-torch                                             # references in the tests
  pybind11-dev python3-pybind11 python3-pytest python3-dev  # the Python module (python/)
  python3-pip python3-venv python3-setuptools python3-wheel # pip install ./python, in a venv
  clang libclang-rt-14-dev                                  # the libFuzzer targets (fuzz/)
  lld                                                       # a faster linker for the tests
  openmpi-bin libopenmpi-dev  # MPI for `mantissa train --distributed` (data-parallel)
)
bench=(
  libdnnl-dev          # oneDNN, the peer of scripts/bench_stable_kernels.py and bench_matmul.py
  libopenblas0-pthread libopenblas-pthread-dev  # OpenBLAS: torch's BLAS and bench_matmul.py's peer
  python3-torchvision  # model shapes for bench/lists (scripts/bench_lists.py --write-lists)
)

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(main)
packages=()
for g in "${groups[@]}"; do
  case "$g" in
    main) packages+=("${main[@]}") ;;
    test) packages+=("${test[@]}") ;;
    bench) packages+=("${bench[@]}") ;;
    all) packages+=("${main[@]}" "${test[@]}" "${bench[@]}") ;;
    *) echo "install-deps: unknown group '$g' (main, test, bench, all)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps (${groups[*]}): all packages present"
  exit 0
fi

echo "install-deps (${groups[*]}): installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
