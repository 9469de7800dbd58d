#!/usr/bin/env bash
# mnt_backend_cuda.so exports MNT_GetPluginApi and nothing else, and needs
# only the C/C++ runtime and the CUDA runtime / cuBLAS / cuDNN libraries.
set -euo pipefail
so="$1"
exported="$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDRBVW]$/ {print $3}' | sort -u)"
[[ "$exported" == "MNT_GetPluginApi" ]] || { echo "FAIL: exports: $exported"; exit 1; }
needed="$(objdump -p "$so" | awk '$1 == "NEEDED" {print $2}')"
for lib in $needed; do
  case "$lib" in
    libstdc++.so.*|libm.so.*|libc.so.*|libgcc_s.so.*|libdl.so.*|librt.so.*|libpthread.so.*) ;;
    libcudart.so.*|libcublasLt.so.*|libcublas.so.*|libcudnn.so.*) ;;
    *) echo "FAIL: unexpected dependency $lib"; exit 1 ;;
  esac
done
echo PASS
