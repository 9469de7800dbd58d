#!/usr/bin/env bash
# mnt_backend_cuda.so and mnt_backend_cuda_relocated.so (the same sources,
# each .cu compiled from a copy at another absolute path, linked the same
# way) must be the same bytes: a CUDA plugin built in another clone or
# sandbox is the plugin built here. On a difference, says which names or
# strings differ (an anonymous-namespace hash, a temporary file name, a path).
#   reproducible_build_test.sh PLUGIN.so RELOCATED.so
set -uo pipefail
a="$1"
b="$2"
fail() { echo "FAIL: $*"; exit 1; }
[[ -s "$a" && -s "$b" ]] || fail "missing or empty: $a $b"
[[ "$(readlink -f "$a")" != "$(readlink -f "$b")" ]] || fail "both arguments are one file"
if cmp -s "$a" "$b"; then
  echo "PASS: $(basename "$a") and $(basename "$b") are the same $(stat -L -c %s "$a") bytes" \
       "($(sha256sum < "$a" | cut -c1-16)...)"
  exit 0
fi
echo "$(basename "$a") and $(basename "$b") differ: $(cmp "$a" "$b" 2>&1 | head -1)"
# Symbol-like strings (names, file names, paths) only: the bytes of code
# and data that moved with them say nothing more.
names() { strings -a -n 12 "$1" | grep -E '^[A-Za-z0-9_.$/-]+$' | sort -u; }
echo "names only in one of them (first 10 each):"
diff <(names "$a") <(names "$b") | grep '^[<>]' | awk '{ n[$1]++; if (n[$1] <= 10) print }'
fail "the CUDA plugin depends on where it was built (tools/cuda.bzl: _reproducible_flags)"
