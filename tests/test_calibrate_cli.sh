#!/usr/bin/env bash
# mantissa calibrate against numpy and transcriptions of published entropy calibrators
# (tests/calibrate_reference.py).
set -euo pipefail
tool="${MANTISSA_BINARY_DIR:?MANTISSA_BINARY_DIR must name the build directory}/mantissa"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "${MANTISSA_SOURCE_DIR:?}/tests/calibrate_reference.py" "$tool" "$work"
# A malformed file is an error naming it, with nothing computed.
printf 'not a numpy file' > "$work/bad.npy"
if "$tool" calibrate "$work/bad.npy" 2> "$work/err.txt"; then
  echo "FAIL: a malformed .npy file was accepted" >&2
  exit 1
fi
grep -q "bad.npy: not a .npy file" "$work/err.txt" || { cat "$work/err.txt"; exit 1; }
# A report that cannot be written (a full disk: /dev/full) is an error, not an empty file and rc 0.
/usr/bin/python3 -c "import numpy as np; np.save('$work/ok.npy', np.arange(64, dtype=np.float32))"
# A per-channel axis below -1 is refused, not taken as per tensor.
if "$tool" calibrate "$work/ok.npy" --per-channel=-2 > /dev/null 2> "$work/err.txt"; then
  echo "FAIL: --per-channel -2 was accepted" >&2
  exit 1
fi
grep -q "per-channel axis -2 is neither -1" "$work/err.txt" || { cat "$work/err.txt"; exit 1; }
if [[ -w /dev/full ]]; then
  if "$tool" calibrate "$work/ok.npy" --json /dev/full > /dev/null 2> "$work/err.txt"; then
    echo "FAIL: calibrate --json /dev/full exited 0" >&2
    exit 1
  fi
  grep -q "cannot write /dev/full" "$work/err.txt" || { cat "$work/err.txt"; exit 1; }
fi
echo "calibrate: all checks passed"
