#!/usr/bin/env bash
# The model check of ABI 1.11 catches a broken gradient hand-over:
# plugin_conformance on the broken-gradient-ready test model (the in-tree
# MLP with its MNT_GradientReadyFn reports broken as
# $MNT_BREAK_GRADIENT_READY says, testdata/broken_gradient_ready_model.cc)
# passes when faithful and fails, naming exactly the hand-over check (with
# the reason), however it is broken.
set -euo pipefail
tool="$1" plugin="$2"
check='gradient_ready_every_element_once_after_last_write'

# run <MNT_BREAK_GRADIENT_READY> <expected exit> <regex the FAIL reason matches, or empty>
run() {
  local how="$1" want_rc="$2" want_why="$3" out rc=0 fails
  out="$(MNT_BREAK_GRADIENT_READY="$how" "$tool" "$plugin")" || rc=$?
  echo "=== MNT_BREAK_GRADIENT_READY=$how: exit $rc"
  fails="$(grep '^\[FAIL\]' <<<"$out" || true)"
  [[ -n "$fails" ]] && echo "$fails"
  if [[ $rc != "$want_rc" ]]; then
    echo "$out"
    echo "FAIL: MNT_BREAK_GRADIENT_READY=$how: exit $rc, expected $want_rc" >&2
    exit 1
  fi
  # The model's other checks still run and pass.
  grep -q '^\[PASS\] model/[a-z_]*/backward_vs_finite_differences' <<<"$out" ||
    { echo "$out"; echo "FAIL: MNT_BREAK_GRADIENT_READY=$how: the gradient checks did not pass" >&2; exit 1; }
  if [[ -z "$want_why" ]]; then
    [[ -z "$fails" ]] || { echo "FAIL: MNT_BREAK_GRADIENT_READY=$how: unexpected FAIL lines" >&2; exit 1; }
    grep -q "^\[PASS\] model/[a-z_]*/$check" <<<"$out" ||
      { echo "$out"; echo "FAIL: the faithful copy's hand-over check did not pass" >&2; exit 1; }
    return
  fi
  # Every FAIL line is the hand-over check, with the expected reason.
  ! grep -v "^\[FAIL\] model/[a-z_]*/$check" <<<"$fails" ||
    { echo "FAIL: MNT_BREAK_GRADIENT_READY=$how: other checks failed too" >&2; exit 1; }
  grep -Eq "$want_why" <<<"$fails" ||
    { echo "FAIL: MNT_BREAK_GRADIENT_READY=$how: no FAIL reason matching '$want_why'" >&2; exit 1; }
}

run "" 0 ""
run early 1 'reported before its last write'
run twice 1 'reported twice'
run gap 1 'never reported'
echo "PASS"
