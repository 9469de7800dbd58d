#!/usr/bin/env bash
# Runs plugin_conformance on one plugin (extra arguments passed on): exit 0,
# at least one PASS, no FAIL. With CONFORMANCE_SKIP_WITHOUT_CUDA_DEVICE=1 (the
# cuda backend's GPU test) a machine without a device passes as skipped, but
# only when the backend's own creation failed saying so.
set -euo pipefail
tool="$1" plugin="$2"
shift 2  # the rest (e.g. --options=...) goes to plugin_conformance
status=0
out="$("$tool" "$plugin" "$@")" || status=$?
echo "$out"
if [[ "${CONFORMANCE_SKIP_WITHOUT_CUDA_DEVICE:-0}" == 1 ]] &&
   grep -q '^\[FAIL\] backend/create: .*no CUDA device' <<<"$out"; then
  echo "SKIPPED: no CUDA device (the cuda backend's conformance needs one)"
  exit 0
fi
(( status == 0 )) || { echo "FAIL: exit status $status" >&2; exit 1; }
grep -q '^\[PASS\]' <<<"$out" || { echo "FAIL: no check passed" >&2; exit 1; }
! grep -q '^\[FAIL\]' <<<"$out" || { echo "FAIL: a check failed" >&2; exit 1; }
grep -q '^conformance: [0-9]* passed, 0 failed' <<<"$out"
