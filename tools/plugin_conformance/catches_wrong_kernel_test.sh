#!/usr/bin/env bash
# The backend kernel checks catch a wrong kernel: plugin_conformance on the
# skewed test backend (the CPU backend with one op's outputs scaled by
# 1 + skew, see tests/abi/skewed_backend.h) passes without skew and fails,
# naming exactly the skewed op's checks, when the skew exceeds the stated
# tolerance (fp32 1e-5, tf32 1e-3, bf16/fp16 1e-2 relative).
set -euo pipefail
tool="$1" plugin="$2"

# run <options> <expected exit> <expected FAIL-line regex or empty>
run() {
  local options="$1" want_rc="$2" want_fail="$3" out rc=0 fails
  out="$("$tool" "$plugin" --options="$options")" || rc=$?
  echo "=== --options=$options: exit $rc"
  fails="$(grep '^\[FAIL\]' <<<"$out" || true)"
  [[ -n "$fails" ]] && echo "$fails"
  if [[ $rc != "$want_rc" ]]; then
    echo "$out"
    echo "FAIL: --options=$options: exit $rc, expected $want_rc" >&2
    exit 1
  fi
  grep -q '^\[PASS\] backend/op ' <<<"$out" ||
    { echo "$out"; echo "FAIL: --options=$options: no kernel check passed" >&2; exit 1; }
  if [[ -z "$want_fail" ]]; then
    [[ -z "$fails" ]] || { echo "FAIL: --options=$options: unexpected FAIL lines" >&2; exit 1; }
    return
  fi
  grep -Eq "$want_fail" <<<"$fails" ||
    { echo "$out"; echo "FAIL: --options=$options: no FAIL line matching '$want_fail'" >&2; exit 1; }
  # Only the skewed op's checks fail: the others still compare equal.
  ! grep -Ev "$want_fail" <<<"$fails" ||
    { echo "FAIL: --options=$options: checks of other ops failed too" >&2; exit 1; }
}

# No skew: the forwarder is faithful, everything passes.
run "" 0 ""
# GEMM compute= values: 1 fp32 (tolerance 1e-5), 2 tf32 (1e-3), 3 bf16 and
# 4 fp16 (1e-2); each checked with two transpose variants.
gemm_fails() { "$tool" "$plugin" --options="$1" | grep -c "^\[FAIL\] backend/op GEMM compute=$2 " || true; }
# 1e-2 on GEMM: the fp32 and tf32 checks all fail (bf16/fp16 sit right at
# their 1e-2 tolerance: whether they fail is rounding luck, not asserted).
run "skew_op=GEMM,skew=1e-2" 1 '^\[FAIL\] backend/op GEMM '
[[ "$(gemm_fails skew_op=GEMM,skew=1e-2 1)" == 2 && "$(gemm_fails skew_op=GEMM,skew=1e-2 2)" == 2 ]] ||
  { echo "FAIL: skew 1e-2 did not fail both fp32 and both tf32 GEMM checks" >&2; exit 1; }
# 1e-4 on GEMM: above the fp32 tolerance, below the tf32/bf16/fp16 ones:
# exactly the two fp32 GEMM checks fail.
run "skew_op=GEMM,skew=1e-4" 1 '^\[FAIL\] backend/op GEMM compute=1 '
[[ "$(gemm_fails skew_op=GEMM,skew=1e-4 1)" == 2 ]] ||
  { echo "FAIL: skew 1e-4 did not fail both fp32 GEMM checks" >&2; exit 1; }
# 1e-7 (about one fp32 ulp): below every tolerance, passes.
run "skew_op=GEMM,skew=1e-7" 0 ""
# An optimizer kernel: ADAMW_STEP's fp32 master/moments off by 1e-3.
run "skew_op=ADAMW_STEP,skew=1e-3" 1 '^\[FAIL\] backend/op ADAMW_STEP'
# A reduction: SOFTMAX off by 1e-4 (fp32 tolerance 1e-5).
run "skew_op=SOFTMAX,skew=1e-4" 1 '^\[FAIL\] backend/op SOFTMAX'
# ABI 1.9 FP8: SCALED_GEMM off by 1e-3 fails its F32-output check (1e-4;
# the BF16/F16 ones allow 1e-2), SCALED_CAST off by 1e-6 fails (tolerance 0).
run "skew_op=SCALED_GEMM,skew=1e-3" 1 '^\[FAIL\] backend/op SCALED_GEMM .* -> f32 '
run "skew_op=SCALED_CAST,skew=1e-6" 1 '^\[FAIL\] backend/op SCALED_CAST '
# ABI 1.10: FP8_SCALE_UPDATE is compared bit for bit: off by 1e-6 (a few
# fp32 ulps of its history and scales) fails both its checks.
run "skew_op=FP8_SCALE_UPDATE,skew=1e-6" 1 '^\[FAIL\] backend/op FP8_SCALE_UPDATE '
[[ "$("$tool" "$plugin" --options=skew_op=FP8_SCALE_UPDATE,skew=1e-6 |
      grep -c '^\[FAIL\] backend/op FP8_SCALE_UPDATE ')" == 2 ]] ||
  { echo "FAIL: skew 1e-6 did not fail both FP8_SCALE_UPDATE checks" >&2; exit 1; }
# ABI 1.10: TENSOR_STATS is compared bit for bit: its largest |x| off by
# 1e-6 fails the three checks that have a finite element (the one with
# none gives {0, 0}, which no scaling changes).
run "skew_op=TENSOR_STATS,skew=1e-6" 1 '^\[FAIL\] backend/op TENSOR_STATS '
[[ "$("$tool" "$plugin" --options=skew_op=TENSOR_STATS,skew=1e-6 |
      grep -c '^\[FAIL\] backend/op TENSOR_STATS ')" == 3 ]] ||
  { echo "FAIL: skew 1e-6 did not fail the three finite TENSOR_STATS checks" >&2; exit 1; }
# ABI 1.11: a backend advertising OPTIMIZER_PIECES that reads the optimizer
# params as 1.10 did (no piece fields: every piece draws element 0's bits,
# every table entry tensor index rounding_tensor + i) fails exactly the four
# piece-vs-whole checks; the whole-tensor optimizer checks still pass.
run "ignore_pieces=1" 1 '^\[FAIL\] backend/optimizer_pieces '
[[ "$("$tool" "$plugin" --options=ignore_pieces=1 |
      grep -c '^\[FAIL\] backend/optimizer_pieces ')" == 4 ]] ||
  { echo "FAIL: ignore_pieces=1 did not fail all four optimizer piece checks" >&2; exit 1; }
# Skewing an optimizer op scales the whole step's and the pieces' outputs
# alike: its piece check still passes (only its kernel check fails, above).
[[ "$("$tool" "$plugin" --options=skew_op=ADAMW_STEP,skew=1e-3 |
      grep -c '^\[PASS\] backend/optimizer_pieces ')" == 4 ]] ||
  { echo "FAIL: the piece checks did not all pass on the skewed ADAMW_STEP" >&2; exit 1; }
# ABI 1.12, checked against float64: ADAMW8BIT_STEP's master and absmax off
# by 1e-4 (tolerances 2e-7 of a weight, 1e-6 of an absmax) fail its three
# single-call checks (found_inf's too: nothing may change); its
# pieces-vs-whole check scales alike and passes. ADAFACTOR_STEP's outputs
# off by 1e-4 fail all four of its checks.
run "skew_op=ADAMW8BIT_STEP,skew=1e-4" 1 '^\[FAIL\] backend/op ADAMW8BIT_STEP '
[[ "$("$tool" "$plugin" --options=skew_op=ADAMW8BIT_STEP,skew=1e-4 |
      grep -c '^\[FAIL\] backend/op ADAMW8BIT_STEP ')" == 3 ]] ||
  { echo "FAIL: skew 1e-4 did not fail the three single-call ADAMW8BIT_STEP checks" >&2; exit 1; }
run "skew_op=ADAFACTOR_STEP,skew=1e-4" 1 '^\[FAIL\] backend/op ADAFACTOR_STEP '
[[ "$("$tool" "$plugin" --options=skew_op=ADAFACTOR_STEP,skew=1e-4 |
      grep -c '^\[FAIL\] backend/op ADAFACTOR_STEP ')" == 4 ]] ||
  { echo "FAIL: skew 1e-4 did not fail the four ADAFACTOR_STEP checks" >&2; exit 1; }
echo PASS
