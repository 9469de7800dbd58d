#!/usr/bin/env bash
# The precision checks of ABI 1.10 catch a broken scaling recipe:
# plugin_conformance on the broken-fp8 test plugin (the in-tree fp8 with its
# recipe broken as $MNT_BREAK_FP8 says, testdata/broken_fp8_precision.cc)
# passes when faithful and fails, naming exactly the recipe's checks,
# however it is broken.
set -euo pipefail
tool="$1" plugin="$2"

# run <MNT_BREAK_FP8> <expected exit> <regex every FAIL line matches, or empty>
run() {
  local how="$1" want_rc="$2" want_fail="$3" out rc=0 fails
  out="$(MNT_BREAK_FP8="$how" "$tool" "$plugin")" || rc=$?
  echo "=== MNT_BREAK_FP8=$how: exit $rc"
  fails="$(grep '^\[FAIL\]' <<<"$out" || true)"
  [[ -n "$fails" ]] && echo "$fails"
  if [[ $rc != "$want_rc" ]]; then
    echo "$out"
    echo "FAIL: MNT_BREAK_FP8=$how: exit $rc, expected $want_rc" >&2
    exit 1
  fi
  # The loss-scaler checks still run and pass.
  grep -q '^\[PASS\] precision/scaler_mode_none_is_identity' <<<"$out" ||
    { echo "$out"; echo "FAIL: MNT_BREAK_FP8=$how: the scaler checks did not pass" >&2; exit 1; }
  if [[ -z "$want_fail" ]]; then
    [[ -z "$fails" ]] || { echo "FAIL: MNT_BREAK_FP8=$how: unexpected FAIL lines" >&2; exit 1; }
    grep -q '^\[PASS\] precision/scaling_recipe (DELAYED, forward f8_e4m3, backward f8_e5m2, history 1024' <<<"$out" ||
      { echo "$out"; echo "FAIL: the faithful copy's recipe check did not pass" >&2; exit 1; }
    grep -q '^\[PASS\] precision/fp8_matmul_declares_a_scaling_recipe' <<<"$out" ||
      { echo "$out"; echo "FAIL: the faithful copy's FP8 MATMUL check did not pass" >&2; exit 1; }
    return
  fi
  grep -Eq "$want_fail" <<<"$fails" ||
    { echo "$out"; echo "FAIL: MNT_BREAK_FP8=$how: no FAIL line matching '$want_fail'" >&2; exit 1; }
  ! grep -Ev "$want_fail" <<<"$fails" ||
    { echo "FAIL: MNT_BREAK_FP8=$how: other checks failed too" >&2; exit 1; }
}

run "" 0 ""
run no_recipe 1 '^\[FAIL\] precision/fp8_matmul_declares_a_scaling_recipe: MATMUL computes in FP8'
run short_table 1 '^\[FAIL\] precision/fp8_matmul_declares_a_scaling_recipe: MATMUL computes in FP8'
run none 1 '^\[FAIL\] precision/fp8_matmul_declares_a_scaling_recipe: MATMUL computes in FP8'
run history0 1 '^\[FAIL\] precision/scaling_recipe \(.*history 0.*\): .*DELAYED with history_length 0'
run bf16_backward 1 '^\[FAIL\] precision/scaling_recipe \(.*backward bf16.*\): .*must be f8_e4m3 or f8_e5m2'
run accepts_unknown 1 "^\[FAIL\] precision/scaling_recipe_rejects_(unknown_option: 'no_such_precision_option=1'|malformed_options: '=,=') was accepted"
echo PASS
