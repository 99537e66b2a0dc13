#!/usr/bin/env bash
# Runs the Python module's tests (python/tests, pytest) against the package in the build tree.
# Registered only where the module is built (not in sanitizer builds).
set -euo pipefail
src="${MANTISSA_SOURCE_DIR:?MANTISSA_SOURCE_DIR must name the source directory}"
bin="${MANTISSA_BINARY_DIR:?MANTISSA_BINARY_DIR must name the build directory}"
python=/usr/bin/python3  # Debian's interpreter: the module is built against it
export PYTHONPATH="$bin/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
cd "$src"
exec "$python" -m pytest -q -p no:cacheprovider "$src/python/tests"
