#!/usr/bin/env bash
# Proves the device bundle starts where a GPU image supplies only glibc,
# libstdc++/libgcc_s and the CUDA toolkit's lib64: unpacks it into a root that
# holds nothing else (no /etc/ld.so.cache, no /usr/lib), enters it with chroot
# inside a user+mount namespace (/usr/local/cuda/lib64, /dev and /proc bound
# in), and runs every bundled executable there with LD_LIBRARY_PATH naming
# only the toolkit's lib64 (where a GPU image keeps cuBLAS): each finds the
# bundle's own libraries through its RPATH, so they run by hand too:
#   - no executable may fail to load ("error while loading shared libraries");
#   - every GPU test exits 0 and reaches its "no CUDA device" skip;
#   - cuda_benchmark and gpt2_benchmark --bench_device=cuda say "no CUDA device";
#   - train --device=cuda fails with one "no CUDA device" line;
#   - train --device=cpu trains (CPU plugin, reference BLAS, protobuf, absl,
#     digits) and gpt2_benchmark --bench_device=cpu measures a row;
#   - plugin_info loads every plugin (all their libraries resolve), and
#     plugin_conformance passes on the CPU backend;
#   - no bundled file needs cuDNN or NVRTC at load time (both load lazily).
# Skips, saying why, where a user+mount namespace cannot be made.
set -uo pipefail
tar_file="$1"
tmp="${TEST_TMPDIR:-$(mktemp -d)}/minimal_root"
rm -rf "$tmp"
root="$tmp/root"
mkdir -p "$root/bundle" "$tmp/out"
tar -xf "$tar_file" -C "$root/bundle"

cuda_lib="$(readlink -f /usr/local/cuda/lib64)"
if [[ ! -d "$cuda_lib" ]]; then
  echo "SKIPPED: no CUDA toolkit lib64 at /usr/local/cuda/lib64 to bind into the root"
  exit 0
fi
if ! why="$(unshare --user --map-root-user --mount true 2>&1)"; then
  echo "SKIPPED: cannot create a user+mount namespace here: $why"
  exit 0
fi

# glibc's own libraries, the C++ runtime and nothing else.
libdir=/lib/x86_64-linux-gnu
mkdir -p "$root/lib64" "$root$libdir" "$root/usr/local/cuda/lib64" "$root/tmp" "$root/dev" "$root/proc"
cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
for lib in libc.so.6 libm.so.6 libmvec.so.1 libpthread.so.0 libdl.so.2 librt.so.1 \
           libresolv.so.2 libutil.so.1 libanl.so.1 libstdc++.so.6 libgcc_s.so.1; do
  [[ -e "$libdir/$lib" ]] && cp -L "$libdir/$lib" "$root$libdir/"
done
chmod 1777 "$root/tmp"

# Runs in the namespace: bind the toolkit, /dev and /proc, then each command
# in the chroot. Arguments: NAME EXPECT ARGS... (EXPECT: ok | fail).
cat > "$tmp/inside.sh" <<'INSIDE'
set -u
root="$1"; out="$2"; cuda_lib="$3"; chroot_bin="$4"; shift 4
mount --bind "$cuda_lib" "$root/usr/local/cuda/lib64" || exit 90
mount --rbind /dev "$root/dev" || exit 91
mount --rbind /proc "$root/proc" || exit 92
while IFS='|' read -r name cmd; do
  [[ -z "$name" ]] && continue
  # shellcheck disable=SC2086
  env -i LD_LIBRARY_PATH=/usr/local/cuda/lib64 RUNFILES_DIR=/bundle/runfiles \
      TEST_SRCDIR=/bundle/runfiles TEST_WORKSPACE=mantissa TEST_TMPDIR=/tmp HOME=/tmp \
      MANTISSA_DIGITS_CSV=/bundle/runfiles/sklearn_digits/digits.csv.gz \
      "$chroot_bin" "$root" $cmd > "$out/$name.log" 2>&1
  echo $? > "$out/$name.rc"
done < "$out/commands"
INSIDE

commands="$tmp/out/commands"
: > "$commands"
for t in "$root"/bundle/bin/cuda_*test; do
  echo "$(basename "$t")|/bundle/bin/$(basename "$t")" >> "$commands"
done
cat >> "$commands" <<'CMDS'
cuda_benchmark|/bundle/bin/cuda_benchmark
gpt2_benchmark_cuda|/bundle/bin/gpt2_benchmark --bench_device=cuda --bench_python=
gpt2_benchmark_cpu|/bundle/bin/gpt2_benchmark --bench_device=cpu --bench_precisions=fp32 --bench_batches=2 --bench_checkpointing=off --bench_steps=1 --bench_warmup_steps=1 --bench_gemm_size=64 --bench_python=
train_cuda|/bundle/bin/train --device=cuda --model=mlp --dataset=digits --steps=2 --progress=plain --cache_dir=/tmp/cache --checkpoint_dir=
train_cpu|/bundle/bin/train --device=cpu --model=mlp --dataset=digits --steps=5 --progress=plain --cache_dir=/tmp/cache --checkpoint_dir=
conformance_cpu|/bundle/bin/plugin_conformance /bundle/runfiles/mantissa/plugins/backends/cpu/mnt_backend_cpu.so
CMDS
for so in $(cd "$root/bundle" && find runfiles -name 'mnt_*.so' | sort); do
  echo "plugin_info_$(basename "$so" .so)|/bundle/bin/plugin_info /bundle/$so" >> "$commands"
done

chroot_bin="$(PATH="$PATH:/usr/sbin:/sbin" command -v chroot)"
unshare --user --map-root-user --mount bash "$tmp/inside.sh" "$root" "$tmp/out" "$cuda_lib" "$chroot_bin"
rc=$?
if (( rc >= 90 )); then
  echo "SKIPPED: the namespace could not bind-mount into the root (inside.sh exit $rc)"
  exit 0
fi

fail=0
# cuDNN and NVRTC are loaded at first use, never at start-up: a GPU machine
# with cuBLAS alone must be able to load every binary and plugin.
while read -r f; do
  if objdump -p "$f" 2>/dev/null | awk '$1 == "NEEDED" {print $2}' | grep -q '^lib\(cudnn\|nvrtc\)'; then
    echo "FAIL ${f#$root/}: needs cuDNN/NVRTC at load time"
    fail=1
  fi
done < <(find "$root/bundle" -type f \( -path '*/bin/*' -o -name '*.so*' \))
check() {  # NAME EXPECT_RC(ok|fail) MUST_CONTAIN
  local name="$1" expect="$2" must="$3" log="$tmp/out/$1.log" got
  got="$(cat "$tmp/out/$name.rc" 2>/dev/null || echo missing)"
  local problem=""
  grep -q "error while loading shared libraries" "$log" && problem="loader error"
  [[ "$expect" == ok && "$got" != 0 ]] && problem="${problem:+$problem; }exit $got"
  [[ "$expect" == fail && "$got" == 0 ]] && problem="${problem:+$problem; }exit 0, expected an error"
  [[ -n "$must" ]] && ! grep -q -- "$must" "$log" && problem="${problem:+$problem; }no '$must'"
  if [[ -n "$problem" ]]; then
    echo "FAIL $name: $problem"
    sed 's/^/    /' "$log" | tail -15
    fail=1
  else
    echo "ok   $name (exit $got)"
  fi
}
for t in "$root"/bundle/bin/cuda_*test; do
  check "$(basename "$t")" ok "SKIPPED: no CUDA device"
done
check cuda_benchmark ok "no CUDA device"
check gpt2_benchmark_cuda ok "no CUDA device"
check gpt2_benchmark_cpu ok "fp32 .* 2 off"
check train_cuda fail "no CUDA device"
check train_cpu ok "eval  step 5"
check conformance_cpu ok "^conformance: [0-9]* passed, 0 failed"
for so in $(cd "$root/bundle" && find runfiles -name 'mnt_*.so' | sort); do
  check "plugin_info_$(basename "$so" .so)" ok "^abi: "
done
if (( fail )); then
  echo "minimal root: FAILED"
  exit 1
fi
echo "minimal root: every bundled executable started with only glibc, libstdc++/libgcc_s and $cuda_lib"
