#!/usr/bin/env bash
# The device check end to end from the unpacked bundle on a machine without a
# GPU (CI): both stages must finish, exit 0, write at most 8 flat files, and
# report every GPU part as skipped for want of a device (never FAIL, TIMEOUT
# or NOT-RUN), every GPU test of the bundle's GPU_TESTS list included, the 13
# training rows (3 models x fp32/tf32/bf16/fp16, GPT-2 in fp8), every
# benchmark row with a reason (fp8's without a PyTorch pair), the PyTorch side
# as skipped, the six goals as NOT-RUN.
set -uo pipefail
tar_file="$1"
tmp="${TEST_TMPDIR:-$(mktemp -d)}/device_check"
rm -rf "$tmp"
mkdir -p "$tmp/bundle"
tar -xf "$tar_file" -C "$tmp/bundle"
"$tmp/bundle/run.sh" "$tmp/results" --stage1_budget=150 --stage2_budget=90 > "$tmp/out.txt" 2>&1
rc=$?
cat "$tmp/out.txt"
fail() { echo "FAIL: $*"; exit 1; }
(( rc == 0 )) || fail "run.sh exited $rc"
files="$(find "$tmp/results" -type f | wc -l)"
(( files >= 1 && files <= 8 )) || fail "$files result files (at most 8 come back from the device tool)"
[[ -z "$(find "$tmp/results" -mindepth 1 -type d)" ]] || fail "results must be flat"
for f in summary.md results.tsv environment.txt stage1.log stage2.log bench.csv; do
  [[ -f "$tmp/results/$f" ]] || fail "no $f"
done
summary="$tmp/results/summary.md"
grep -q "^| [^|]* | \(FAIL\|TIMEOUT\|NOT-RUN\|RUNNING\) |" "$summary" && fail "a FAIL, TIMEOUT, NOT-RUN or RUNNING item without a GPU"
while read -r label how; do
  case "$how" in
    bin/cuda_*) t="$(basename "$how")"
      # SKIPPED, or PASS for the tests that need no device with the others skipped.
      grep -q "^| $t | \(SKIPPED\|PASS\) | .* | .*no CUDA device" "$summary" || fail "$label ($t) did not skip for want of a device" ;;
    bin/plugin_conformance)
      grep -q "^| plugin_conformance(cuda) | SKIPPED | .*no CUDA device" "$summary" || fail "$label did not run as plugin_conformance(cuda)" ;;
    *) fail "$label: the device check does not know how to run '$how'" ;;
  esac
done < "$tmp/bundle/GPU_TESTS"
n_train="$(grep -c '^| train \(mlp\|cnn\|gpt2\) \(fp32\|tf32\|bf16\|fp16\) | SKIPPED | .* | no CUDA device |' "$summary")"
(( n_train == 12 )) || fail "$n_train of 12 train runs skipped for want of a device"
# GPT-2 124M in fp8 (FP8 GEMMs), the same job as bf16's, reported the same way.
grep -q '^| train gpt2 fp8 | SKIPPED | .* | no CUDA device |' "$summary" ||
  fail "train gpt2 fp8 did not skip for want of a device"
n_train_all="$(grep -c '^| train ' "$summary")"
(( n_train_all == 13 )) || fail "$n_train_all train rows, expected 13 (12 + gpt2 fp8)"
grep -q "^| compute-sanitizer | SKIPPED \|^| memcheck cuda_kernels_test | SKIPPED " "$summary" ||
  fail "memcheck neither ran (skipping for want of a device) nor said why it could not"
rows="$(grep -c '^| \(fp32\|tf32\|bf16\|fp16\|fp8\) | 16 | \(on\|off\) | SKIPPED: no CUDA device' "$summary")"
(( rows == 6 )) || fail "$rows of 6 Mantissa benchmark rows say 'no CUDA device'"
# fp8 has no PyTorch pair (no built-in FP8 training in PyTorch) and says so.
grep -q '^| fp8 | 16 | off | SKIPPED: no CUDA device .* | none: no built-in FP8 training in PyTorch |' "$summary" ||
  fail "the fp8 benchmark row does not say why it has no PyTorch pair"
n_torch="$(grep -c '^| pytorch \(fp32\|tf32\|bf16\|fp16\) B=16 ckpt=off | SKIPPED | ' "$summary")"
(( n_torch == 4 )) || fail "$n_torch of 4 PyTorch rows say why they were skipped"
grep -q '^| pytorch fp8 ' "$summary" && fail "a PyTorch fp8 row (PyTorch has no built-in FP8 training)"
n_goals="$(grep -c '^| .* | NOT-RUN | ' "$summary")"
(( n_goals == 6 )) || fail "$n_goals of 6 goals NOT-RUN (each with the row it lacks)"
grep -q '^Goals: 6 NOT-RUN\.$' "$summary" || fail "no goal count line"
grep -q "libcublasLt.so.13: " "$tmp/results/environment.txt" || fail "environment.txt does not say which cuBLASLt was used"
grep -q "^\[cuda_kernels_test\] " "$tmp/results/stage1.log" || fail "stage1.log lacks the tests' output"
echo "PASS: device check ran end to end without a GPU ($files files)"
