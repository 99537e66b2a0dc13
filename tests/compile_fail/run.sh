#!/usr/bin/env bash
# Compiles tests/compile_fail/declaration_errors.cc once per CASE: CASE 0 must compile, every
# other CASE must fail with the message naming the broken rule.
# Usage: run.sh <c++ compiler> <include dir>...
set -u
cxx=$1
shift
includes=()
for dir in "$@"; do includes+=("-I$dir"); done
src="$(dirname "$0")/declaration_errors.cc"
expect=(
  ""                                                  # 0: well formed
  "tensors_member_name_differs_from_its_argument"     # 1
  "tensors_member_is_not_declared_in_argument_order"  # 2
  "tensors_struct_has_a_member_the_declaration_lacks" # 3
  "tensors_member_type_does_not_fit_its_argument"     # 4
  "params_member_default_differs_from_its_attribute"  # 5
  "params_member_(name_differs_from_its_attribute|is_not_declared_in_attribute_order)"  # 6
  "normalised_dims"                                   # 7: a misspelt hook
  "hook_defined_but_not_in_kHooks"                    # 8
  "aclnn_handles_named_unlike_the_declared_arguments" # 9: handles out of order
  "aclnn_handles_named_unlike_the_declared_arguments" # 10: a handle left out
)
failed=0
for i in "${!expect[@]}"; do
  out=$("$cxx" -std=c++20 -fsyntax-only "${includes[@]}" -DCASE="$i" "$src" 2>&1)
  rc=$?
  if [[ $i == 0 ]]; then
    if [[ $rc != 0 ]]; then
      echo "CASE 0 (well formed) does not compile:"; echo "$out" | head -20; failed=1
    fi
  elif [[ $rc == 0 ]]; then
    echo "CASE $i compiles, but must fail with ${expect[$i]}"; failed=1
  elif ! grep -Eq "${expect[$i]}" <<<"$out"; then
    echo "CASE $i fails, but not with ${expect[$i]}:"; echo "$out" | grep -m3 error; failed=1
  else
    echo "CASE $i refused: ${expect[$i]}"
  fi
done
exit $failed
