#!/usr/bin/env bash
# Builds the ABI-describing shared object from the generated C file and dumps
# it with abidw (Debian abigail-tools).
#   make_abixml.sh OUT.abixml TYPES.c INCLUDE_ROOT
set -euo pipefail
out="$1" src="$2" root="$3"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
gcc -std=c11 -g -O0 -shared -fPIC -I"$root" "$src" -o "$tmp/libmantissa_abi.so"
abidw --no-corpus-path --no-comp-dir-path "$tmp/libmantissa_abi.so" > "$out"
