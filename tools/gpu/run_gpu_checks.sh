#!/usr/bin/env bash
# One-shot GPU checks for the cuda backend.
#
#   tools/gpu/run_gpu_checks.sh            # on the build machine: build + pack
#   device_bundle/run.sh [RESULTS_DIR]     # on the GPU machine: run everything
#
# Packing builds the GPU tests, the benchmark, the trainer and the plugins
# with tools/bazel, then copies them with their runfiles (plugin .so files,
# the digits csv) into the git-ignored folder device_bundle/. No CUDA library
# is copied except libcudart (a fallback, used only when the GPU machine has
# none): cuBLAS/cuBLASLt come from the GPU machine, /usr/local/cuda/lib64 or,
# failing that, a Python environment's site-packages/nvidia/*/lib (PyTorch
# wheels carry them).
#
# run.sh runs every GPU test and the benchmark and prints one table; logs, the
# table and the benchmark's markdown (for docs/performance.md) go to
# RESULTS_DIR (default device_bundle/results).
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$(pwd)"
bundle="$root/device_bundle"

tests=(cuda_api_test cuda_kernels_test cuda_gemm_test cuda_layers_test
       cuda_attention_cudnn_test cuda_loss_scaling_test cuda_mlp_training_test
       cuda_model_training_test)
targets=()
for t in "${tests[@]}"; do targets+=("//plugins/backends/cuda:$t"); done
targets+=(//plugins/backends/cuda:cuda_benchmark //plugins/backends/cuda:mnt_backend_cuda.so
          //trainer/cli:train)

echo "run_gpu_checks: building ${#targets[@]} targets"
tools/bazel build "${targets[@]}"
bin="$(tools/bazel info bazel-bin 2>/dev/null)"

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
for t in "${tests[@]}" cuda_benchmark; do
  cp "$bin/plugins/backends/cuda/$t" "$bundle/bin/"
  # -L: runfiles are symlinks into Bazel's output base.
  if [[ -d "$bin/plugins/backends/cuda/$t.runfiles" ]]; then
    cp -rL "$bin/plugins/backends/cuda/$t.runfiles" "$bundle/bin/$t.runfiles"
  fi
done
cp "$bin/trainer/cli/train" "$bundle/bin/"
cp -rL "$bin/trainer/cli/train.runfiles" "$bundle/bin/train.runfiles"
mkdir -p "$bundle/plugins"
find "$bundle/bin/train.runfiles" -name 'mnt_*.so' -exec cp {} "$bundle/plugins/" \;
cudart="$(ldd "$bundle/bin/cuda_api_test" | awk '/libcudart\.so/ {print $3}')"
[[ -n "$cudart" && -f "$cudart" ]] && cp -L "$cudart" "$bundle/lib/"

cat > "$bundle/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs every GPU test and the cuda benchmark; prints one table.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tests=(@TESTS@)
results="${1:-$here/results}"
mkdir -p "$results"

# cuBLAS/cuBLASLt/cuDNN 9: the machine's toolkit, else a Python env's nvidia
# wheels (nvidia-cudnn-cu12 etc.), else (cudart only) the bundled copy.
# cuDNN is not bundled: its engine libraries alone are ~500 MB.
libpath=""
if ! ls /usr/local/cuda/lib64/libcublasLt.so.* >/dev/null 2>&1 ||
   ! ls /usr/local/cuda/lib64/libcudnn.so.9* /usr/lib/x86_64-linux-gnu/libcudnn.so.9* \
       >/dev/null 2>&1; then
  for py in python3 /opt/*/bin/python3 /root/*/bin/python3 /home/*/*/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    for sp in $("$py" -c 'import site,sys; print(" ".join(site.getsitepackages()+[p for p in sys.path if p.endswith("-packages")]))' 2>/dev/null); do
      for d in "$sp"/nvidia/*/lib; do [[ -d "$d" ]] && libpath="$libpath:$d"; done
    done
    [[ -n "$libpath" ]] && break
  done
fi
export LD_LIBRARY_PATH="${libpath#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:$here/lib"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" > "$results/environment.txt"
nvidia-smi >> "$results/environment.txt" 2>&1 || echo "nvidia-smi: not available" >> "$results/environment.txt"
missing="$(ldd "$here/bin/cuda_api_test" | grep 'not found' || true)"
if [[ -n "$missing" ]]; then
  echo "run.sh: missing shared libraries:"; echo "$missing"
fi

rows=()
status=0
for t in "${tests[@]}"; do
  log="$results/$t.log"
  start=$(date +%s)
  tmp="$(mktemp -d)"
  TEST_SRCDIR="$here/bin/$t.runfiles" TEST_TMPDIR="$tmp" \
    "$here/bin/$t" > "$log" 2>&1
  rc=$?
  rm -rf "$tmp"
  secs=$(( $(date +%s) - start ))
  passed=$(grep -c '^\[       OK \]' "$log" || true)
  skipped=$(grep '^\[  SKIPPED \] [A-Za-z]' "$log" | sed 's/ (.*//' | sort -u | wc -l)
  failed=$(grep '^\[  FAILED  \] [A-Za-z]' "$log" | sed 's/ (.*//' | sort -u | wc -l)
  if [[ $rc -ne 0 ]]; then result="FAIL (rc $rc)"; status=1;
  elif [[ $skipped -gt 0 ]]; then result="PASS with skips";
  else result="PASS"; fi
  rows+=("| $t | $result | $passed | $skipped | $failed | ${secs}s |")
done
# The real CLI on the GPU: MLP on digits in bf16.
start=$(date +%s)
"$here/bin/train" --device=cuda --model=mlp --dataset=digits --precision=bf16 \
  --steps=200 --progress=none --cache_dir="$results/cache" > "$results/train_cuda_bf16.log" 2>&1
rc=$?
secs=$(( $(date +%s) - start ))
if grep -q "no CUDA device" "$results/train_cuda_bf16.log"; then train="SKIPPED (no CUDA device)"
elif [[ $rc -ne 0 ]]; then train="FAIL (rc $rc)"; status=1
else train="PASS ($(grep -io 'accuracy[^,]*' "$results/train_cuda_bf16.log" | tail -1))"; fi
rows+=("| train --device=cuda (mlp, bf16, 200 steps) | $train | - | - | - | ${secs}s |")
# The CNN (cuDNN convolutions, pooling, batch norm) and GPT-2 tiny (attention)
# through the CLI on the GPU in bf16.
yes "the cat sat on the mat while the dogs ran past and the birds sang." |
  head -4000 > "$results/corpus.txt"
for job in "cnn|--model=cnn --model_options=depth=2,width=16 --dataset=digits --steps=300" \
           "gpt2|--model=gpt2 --dataset=text --text_path=$results/corpus.txt --seq_len=63 --steps=100"; do
  name="${job%%|*}"
  start=$(date +%s)
  # shellcheck disable=SC2086
  "$here/bin/train" --device=cuda --precision=bf16 --progress=none \
    --cache_dir="$results/cache" ${job#*|} > "$results/train_cuda_${name}_bf16.log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  if grep -q "no CUDA device" "$results/train_cuda_${name}_bf16.log"; then train="SKIPPED (no CUDA device)"
  elif [[ $rc -ne 0 ]]; then train="FAIL (rc $rc)"; status=1
  else train="PASS ($(grep -io 'eval .*loss[^,]*' "$results/train_cuda_${name}_bf16.log" | tail -1))"; fi
  rows+=("| train --device=cuda ($name, bf16) | $train | - | - | - | ${secs}s |")
done
start=$(date +%s)
"$here/bin/cuda_benchmark" --append="$results/performance_fragment.md" > "$results/cuda_benchmark.log" 2>&1
rc=$?
secs=$(( $(date +%s) - start ))
bench="PASS"; [[ $rc -ne 0 ]] && { bench="FAIL (rc $rc)"; status=1; }
grep -q "no CUDA device" "$results/cuda_benchmark.log" && bench="SKIPPED (no CUDA device)"
rows+=("| cuda_benchmark | $bench | - | - | - | ${secs}s |")

{
  echo "| check | result | passed | skipped | failed | time |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee "$results/summary.md"
echo
grep -h "SKIPPED: no CUDA device" "$results"/*.log | sort -u | head -1
[[ -f "$results/performance_fragment.md" ]] && cat "$results/performance_fragment.md"
exit $status
RUN
sed -i "s/@TESTS@/${tests[*]}/" "$bundle/run.sh"
chmod +x "$bundle/run.sh"
echo "run_gpu_checks: packed $(du -sh "$bundle" | cut -f1) into $bundle; on the GPU machine run: device_bundle/run.sh"
