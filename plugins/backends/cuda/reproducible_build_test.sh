#!/usr/bin/env bash
# Files built where the workspace is and the same files built from copies of
# their sources at another absolute path must be the same bytes: a CUDA
# plugin built in another clone or sandbox is the plugin built here.
#   reproducible_build_test.sh BUILT... -- RELOCATED...
# Each RELOCATED file is compared with the BUILT file of the same name
# (objects: a sample of kernels; or the two linked plugins). On a difference,
# says which names or strings differ (an anonymous-namespace hash, a
# temporary file name, a path).
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
built=()
while [[ $# -gt 0 && "$1" != "--" ]]; do built+=("$1"); shift; done
[[ $# -gt 0 ]] || fail "usage: $0 BUILT... -- RELOCATED..."
shift
[[ $# -gt 0 && ${#built[@]} -gt 0 ]] || fail "nothing to compare"
# Symbol-like strings (names, file names, paths) only: the bytes of code
# and data that moved with them say nothing more.
names() { strings -a -n 12 "$1" | grep -E '^[A-Za-z0-9_.$/-]+$' | sort -u; }
status=0
for b in "$@"; do
  a=""
  for x in "${built[@]}"; do [[ "$(basename "$x")" == "$(basename "$b")" ]] && a="$x"; done
  [[ -n "$a" ]] || fail "$(basename "$b"): no built file of that name among ${built[*]}"
  [[ -s "$a" && -s "$b" ]] || fail "missing or empty: $a $b"
  [[ "$(readlink -f "$a")" != "$(readlink -f "$b")" ]] || fail "both are one file: $a"
  if cmp -s "$a" "$b"; then
    echo "PASS: $(basename "$a"): the same $(stat -L -c %s "$a") bytes" \
         "($(sha256sum < "$a" | cut -c1-16)...) built here and from a copy elsewhere"
    continue
  fi
  echo "$(basename "$a") differs from its relocated build: $(cmp "$a" "$b" 2>&1 | head -1)"
  echo "names only in one of them (first 10 each):"
  diff <(names "$a") <(names "$b") | grep '^[<>]' | awk '{ n[$1]++; if (n[$1] <= 10) print }'
  status=1
done
[[ $status == 0 ]] || fail "the CUDA plugin depends on where it was built (tools/cuda.bzl: _reproducible_flags)"
echo "PASS: $# file(s) the same wherever they were built"
