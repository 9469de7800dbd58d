#!/usr/bin/env bash
# A backend plugin .so exports MNT_GetPluginApi and nothing else, and needs
# no libraries beyond the C/C++ runtime and those its BUILD names.
#   exports_test.sh <plugin.so> [allowed NEEDED glob ...]
set -euo pipefail
so="$1"
shift
allowed=('libstdc++.so.*' 'libm.so.*' 'libc.so.*' 'libgcc_s.so.*' "$@")
exported="$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDRBVW]$/ {print $3}' | sort -u)"
[[ "$exported" == "MNT_GetPluginApi" ]] || { echo "FAIL: exports: $exported"; exit 1; }
needed="$(objdump -p "$so" | awk '$1 == "NEEDED" {print $2}')"
for lib in $needed; do
  ok=0
  for pattern in "${allowed[@]}"; do
    # shellcheck disable=SC2053  # the pattern is a glob on purpose
    [[ "$lib" == $pattern ]] && ok=1
  done
  (( ok )) || { echo "FAIL: unexpected dependency $lib"; exit 1; }
done
echo PASS
