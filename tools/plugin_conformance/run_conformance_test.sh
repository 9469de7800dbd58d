#!/usr/bin/env bash
# Runs plugin_conformance on one plugin (extra arguments passed on): exit 0,
# at least one PASS, no FAIL.
set -euo pipefail
tool="$1" plugin="$2"
shift 2  # the rest (e.g. --options=...) goes to plugin_conformance
out="$("$tool" "$plugin" "$@")" || { echo "$out"; echo "FAIL: exit status $?" >&2; exit 1; }
echo "$out"
grep -q '^\[PASS\]' <<<"$out" || { echo "FAIL: no check passed" >&2; exit 1; }
! grep -q '^\[FAIL\]' <<<"$out" || { echo "FAIL: a check failed" >&2; exit 1; }
grep -q '^conformance: [0-9]* passed, 0 failed' <<<"$out"
