#!/usr/bin/env bash
# Runs the Python module's tests (python/tests, pytest) against the package in the build tree,
# then imports the package from an installed tree (cmake --install into a temporary prefix).
# Registered only where the module is built (not in sanitizer builds).
set -euo pipefail
src="${MANTISSA_SOURCE_DIR:?MANTISSA_SOURCE_DIR must name the source directory}"
bin="${MANTISSA_BINARY_DIR:?MANTISSA_BINARY_DIR must name the build directory}"
python=/usr/bin/python3  # Debian's interpreter: the module is built against it
export PYTHONDONTWRITEBYTECODE=1

cd "$src"
PYTHONPATH="$bin/python${PYTHONPATH:+:$PYTHONPATH}" \
  "$python" -m pytest -q -p no:cacheprovider "$src/python/tests"

# The installed package loads the installed library (its RUNPATH), not the build tree's.
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$bin" --prefix "$prefix" >/dev/null
site="$(sed -n 's/^MANTISSA_PYTHON_INSTALL_DIR:[A-Z]*=//p' "$bin/CMakeCache.txt")"
cd "$prefix"
PYTHONPATH="$prefix/$site" "$python" - "$prefix" <<'PY'
import sys
import numpy as np
import mantissa
prefix = sys.argv[1]
assert mantissa.__file__.startswith(prefix), mantissa.__file__
libs = [line.split()[-1] for line in open("/proc/self/maps") if "libmantissa.so" in line]
assert libs and all(path.startswith(prefix) for path in libs), libs
scale, tracker = np.array([4.0], np.float32), np.array([0], np.int32)
mantissa.amp_update_scale(scale, tracker, np.array([1.0], np.float32))
assert scale[0] == 2.0
print("installed package:", mantissa.__file__, "library:", libs[0])
PY
