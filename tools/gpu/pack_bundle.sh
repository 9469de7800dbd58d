#!/usr/bin/env bash
# Packs the GPU device bundle (called by the //tools/gpu:device_bundle
# genrule; tools/gpu/run_gpu_checks.sh unpacks it into device_bundle/).
#
#   pack_bundle.sh OUT.tar DEST=SRC...
#
# DEST is a path inside the bundle (bin/..., runfiles/..., scripts/...). The
# layout has one copy of every file:
#   run.sh, env.sh       the device check and the environment for manual runs
#   bin/                 test binaries, train, benchmarks, plugin_info (stripped)
#   runfiles/            one runfiles tree shared by every binary (plugins,
#                        digits), found through $RUNFILES_DIR / $TEST_SRCDIR
#   lib/                 every shared library the binaries and plugins need,
#                        except glibc's own, libstdc++/libgcc_s, the driver
#                        (libcuda) and CUDA's large libraries (cuBLAS,
#                        cuBLASLt, cuDNN, NVRTC), which the GPU machine has;
#                        libblas.so.3 is Debian's reference BLAS (libblas3),
#                        not OpenBLAS (35 MB), for the CPU reference backend
#   scripts/             device_check.py, the PyTorch benchmark, the shard maker
#   MANIFEST             what is inside and where each library came from
# Every ELF file carries an RPATH to lib/ ($ORIGIN-relative, DT_RPATH so it
# also covers the libraries its libraries load), so each binary runs by hand
# without LD_LIBRARY_PATH; only CUDA's large libraries come from the machine
# (its loader cache, or LD_LIBRARY_PATH as env.sh sets it).
# Fails if any ELF file needs a library that is neither in lib/ nor allowed
# from the system, or if the bundle exceeds 48 MiB.
set -euo pipefail
out="$1"
shift
stage="$(mktemp -d "${TMPDIR:-/tmp}/device_bundle.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
limit=$((48 * 1024 * 1024))
reference_blas=/usr/lib/x86_64-linux-gnu/blas/libblas.so.3

for pair in "$@"; do
  dest="${pair%%=*}"
  src="${pair#*=}"
  mkdir -p "$stage/$(dirname "$dest")"
  case "$dest" in
    bin/*|runfiles/*.so) strip --strip-unneeded -o "$stage/$dest" "$src" ;;
    *) cp -L "$src" "$stage/$dest" ;;
  esac
  chmod u+w,a+r "$stage/$dest"
  case "$dest" in bin/*|*.sh|*.py) chmod a+x "$stage/$dest" ;; esac
done

# Sonames the GPU machine provides (glibc's own libraries, the C++ runtime,
# the driver, CUDA's large libraries). Everything else must be in lib/.
system_soname() {
  case "$1" in
    linux-vdso.so.*|ld-linux-x86-64.so.2|libc.so.6|libm.so.6|libmvec.so.1|libpthread.so.0|\
    libdl.so.2|librt.so.1|libresolv.so.2|libutil.so.1|libanl.so.1|\
    libstdc++.so.6|libgcc_s.so.1|\
    libcuda.so.1|libcublas.so.13|libcublasLt.so.13|libcudnn*.so.9|libnvrtc*.so.13) return 0 ;;
  esac
  return 1
}

elf_files() {
  find "$stage" -type f \( -path "$stage/bin/*" -o -name '*.so' -o -name '*.so.*' \) |
    while read -r f; do
      [[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" == '177ELF' ]] && echo "$f"
    done
}

# The closure of every ELF file's libraries, resolved as this machine's loader
# does, except libblas.so.3, which resolves to the reference BLAS.
[[ -f "$reference_blas" ]] || {
  echo "pack_bundle: $reference_blas missing; install Debian's libblas3 (tools/bazel does)" >&2
  exit 1
}
mkdir -p "$stage/lib"
manifest_libs=()
changed=1
while (( changed )); do
  changed=0
  while read -r f; do
    while read -r soname arrow path rest; do
      [[ "$arrow" == "=>" ]] || continue
      system_soname "$soname" && continue
      [[ -e "$stage/lib/$soname" ]] && continue
      [[ "$soname" == libblas.so.3 ]] && path="$reference_blas"
      if [[ "$path" == "not" || ! -f "$path" ]]; then
        echo "pack_bundle: $(basename "$f") needs $soname, which is not on this machine" >&2
        exit 1
      fi
      cp -L "$path" "$stage/lib/$soname"
      chmod u+w,a+r "$stage/lib/$soname"
      strip --strip-unneeded "$stage/lib/$soname" 2>/dev/null || true
      manifest_libs+=("lib/$soname <- $(readlink -f "$path")")
      changed=1
    done < <(LD_LIBRARY_PATH="$(dirname "$reference_blas"):$stage/lib" ldd "$f" 2>/dev/null || true)
  done < <(elf_files)
done

# Every NEEDED entry of every ELF file is in lib/ or a system soname.
bad=0
while read -r f; do
  for needed in $(objdump -p "$f" | awk '$1 == "NEEDED" {print $2}'); do
    if ! system_soname "$needed" && [[ ! -e "$stage/lib/$needed" ]]; then
      echo "pack_bundle: ${f#$stage/} needs $needed, which the bundle lacks" >&2
      bad=1
    fi
  done
done < <(elf_files)
(( bad == 0 )) || exit 1

# RPATHs: bin/* -> $ORIGIN/../lib, lib/* -> $ORIGIN, a plugin under
# runfiles/ -> $ORIGIN/<as many ../ as it is deep>/lib.
command -v patchelf >/dev/null || {
  echo "pack_bundle: patchelf missing; install Debian's patchelf (tools/bazel does)" >&2
  exit 1
}
while read -r f; do
  rel="${f#$stage/}"
  up="$(dirname "$rel" | sed -e 's|[^/][^/]*|..|g')"
  patchelf --force-rpath --set-rpath "\$ORIGIN/$up/lib" "$f"
done < <(elf_files | grep -v "^$stage/lib/")
while read -r f; do
  patchelf --force-rpath --set-rpath '$ORIGIN' "$f"
done < <(elf_files | grep "^$stage/lib/")

cuda_version="$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' || true)"
size="$(du -sb "$stage" | cut -f1)"
{
  echo "Mantissa GPU device bundle, packed $(date -u +%Y-%m-%dT%H:%M:%SZ) with CUDA toolkit ${cuda_version:-unknown}"
  echo "size: $size bytes (limit $limit)"
  echo "libraries copied from the build machine:"
  printf '  %s\n' "${manifest_libs[@]}"
  echo "files:"
  (cd "$stage" && find . -type f -printf '  %p %s\n' | sort)
} > "$stage/MANIFEST"
size="$(du -sb "$stage" | cut -f1)"
if (( size > limit )); then
  echo "pack_bundle: the bundle is $size bytes, over the 48 MiB limit ($limit); largest files:" >&2
  (cd "$stage" && find . -type f -printf '%s %p\n' | sort -rn | head -10) >&2
  exit 1
fi
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$out" -C "$stage" .
echo "pack_bundle: $size bytes in $(find "$stage" -type f | wc -l) files"
