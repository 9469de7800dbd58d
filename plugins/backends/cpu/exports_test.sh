#!/usr/bin/env bash
# mnt_backend_cpu.so exports MNT_GetPluginApi and nothing else, and needs no
# libraries beyond libstdc++/libm/libc and the generic BLAS libblas.so.3 (no absl).
set -euo pipefail
so="$1"
exported="$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDRBVW]$/ {print $3}' | sort -u)"
[[ "$exported" == "MNT_GetPluginApi" ]] || { echo "FAIL: exports: $exported"; exit 1; }
needed="$(objdump -p "$so" | awk '$1 == "NEEDED" {print $2}')"
for lib in $needed; do
  case "$lib" in
    libstdc++.so.*|libm.so.*|libc.so.*|libgcc_s.so.*|libblas.so.3) ;;
    *) echo "FAIL: unexpected dependency $lib"; exit 1 ;;
  esac
done
echo PASS
