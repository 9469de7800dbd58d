#!/usr/bin/env bash
# The SDK bundle ships copies of the offline Bazel shims (a consumer workspace
# cannot reach this repository's third_party/); they must not drift from the
# originals the main WORKSPACE uses.
set -euo pipefail
status=0
while (( $# >= 2 )); do
  copy="$1" original="$2"
  shift 2
  if ! cmp -s "$copy" "$original"; then
    echo "FAIL: $copy differs from $original; copy the original over it"
    diff -u "$original" "$copy" || true
    status=1
  fi
done
[[ $status == 0 ]] && echo "PASS: bundle shims match third_party/"
exit $status
