#!/usr/bin/env bash
# Installs the build into a temporary prefix, checks the installed layout, then uses it as a
# user would: a CMake project with find_package(mantissa) (a C program on the aclnn API and a
# C++ program on the C++ API), and the AmpUpdateScale sample built with plain g++ and pkg-config.
set -euo pipefail

src="${MANTISSA_SOURCE_DIR:?MANTISSA_SOURCE_DIR must name the source directory}"
bin="${MANTISSA_BINARY_DIR:?MANTISSA_BINARY_DIR must name the build directory}"
work="$(mktemp -d "${TMPDIR:-/tmp}/mantissa-install-XXXXXX")"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
status=0
fail() {
  echo "FAIL: $*" >&2
  status=1
}

# A sanitized build's library needs its users built with the same sanitizers.
sanitize="$(sed -n 's/^MANTISSA_SANITIZE:STRING=//p' "$bin/CMakeCache.txt" 2>/dev/null || true)"
san_flags=""
[[ -n "$sanitize" ]] && san_flags="-fsanitize=$sanitize"

cmake --install "$bin" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log"; echo "FAIL: cmake --install" >&2; exit 1; }

# The layout promised by the packaging section of the product brief.
for path in \
  lib/libmantissa.so \
  include/mantissa/mantissa.h \
  include/mantissa/tensor.h \
  include/mantissa/reduce.h \
  include/mantissa/ops/amp_update_scale.h \
  include/mantissa/ops/apply_adam_d.h \
  include/mantissa/compat/acl/acl.h \
  include/mantissa/compat/acl/acl_op_compiler.h \
  include/mantissa/compat/aclnn/acl_meta.h \
  include/mantissa/compat/aclnnop/aclnn_amp_update_scale.h \
  include/mantissa/compat/aclnnop/aclnn_apply_adam_d.h \
  lib/cmake/mantissa/mantissaConfig.cmake \
  lib/cmake/mantissa/mantissaConfigVersion.cmake \
  lib/cmake/mantissa/mantissaTargets.cmake \
  lib/pkgconfig/mantissa.pc \
  bin/mantissa; do
  [[ -e "$prefix/$path" ]] || fail "not installed: $path"
done
# Internal headers stay out of the installed tree.
if [ -n "$(find "$prefix/include" -name '*internal*')" ]; then
  fail "internal headers were installed: $(find "$prefix/include" -name '*internal*')"
fi
[[ -x "$prefix/bin/mantissa" ]] && { "$prefix/bin/mantissa" --help >/dev/null ||
  fail "the installed bin/mantissa does not run"; }

# 1. A CMake consumer through find_package(mantissa) and mantissa::mantissa.
if cmake -S "$src/tests/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$san_flags" -DCMAKE_CXX_FLAGS="$san_flags" \
     -DCMAKE_EXE_LINKER_FLAGS="$san_flags" >"$work/consumer.log" 2>&1 &&
   cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1; then
  for program in consumer_aclnn consumer_cxx; do
    exe="$work/consumer/$program"
    # It must load the installed library, not the build tree's.
    # (Capture first: with pipefail, grep -q closing the pipe early would fail the pipeline.)
    libs="$(ldd "$exe")"
    grep -q "$prefix/lib/libmantissa.so" <<<"$libs" ||
      fail "$program does not load $prefix/lib/libmantissa.so: $(grep mantissa <<<"$libs")"
    out="$("$exe")" || fail "$program exited with $?: $out"
    echo "$out"
  done
  grep -q "consumer_aclnn: scale 2048.0 tracker 0" <<<"$("$work/consumer/consumer_aclnn")" ||
    fail "consumer_aclnn printed the wrong result"
else
  cat "$work/consumer.log"
  fail "the find_package consumer did not configure or build"
fi

# 2. The CANN sample, unchanged, with plain g++ and pkg-config.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
if flags="$(pkg-config --cflags --libs mantissa)"; then
  # shellcheck disable=SC2086  # the flag lists are several words
  if g++ -std=c++17 $san_flags "$src/examples/test_aclnn_amp_update_scale.cpp" $flags \
       -o "$work/sample" 2>"$work/sample.log"; then
    out="$(LD_LIBRARY_PATH="$prefix/lib" "$work/sample")" || fail "the sample exited with $?"
    echo "$out"
    [[ "$out" == *"updatedScale 65536.000000, updatedGrowthTracker 901"* ]] ||
      fail "the sample printed: $out"
  else
    cat "$work/sample.log"
    fail "the sample does not compile against the installed headers (flags: $flags)"
  fi
  includedir="$(pkg-config --variable=includedir mantissa)"
  [[ "$(realpath "$includedir")" == "$(realpath "$prefix/include")" ]] ||
    fail "pkg-config's includedir $includedir is not $prefix/include"
else
  fail "pkg-config does not find mantissa in $PKG_CONFIG_PATH"
fi

exit $status
