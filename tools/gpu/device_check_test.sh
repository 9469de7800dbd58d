#!/usr/bin/env bash
# The device check end to end from the unpacked bundle on a machine without a
# GPU (CI). First the plan: `run.sh OUT --plan` runs nothing, writes nothing,
# lists every GPU test of the bundle's GPU_TESTS list, and its total fits the
# device tool's timeout_s of 540. Then the run: it must exit 0, write at most
# 8 flat files, and report every GPU part as skipped for want of a device
# (never FAIL, TIMEOUT, CUT or RUNNING), every GPU test included, the 13
# training rows (3 models x fp32/tf32/bf16/fp16, GPT-2 in fp8), every
# benchmark row with a reason (fp8's without a PyTorch pair), the PyTorch
# side as skipped, the six goals as NOT-RUN.
set -uo pipefail
tar_file="$1"
tmp="${TEST_TMPDIR:-$(mktemp -d)}/device_check"
rm -rf "$tmp"
mkdir -p "$tmp/bundle"
tar -xf "$tar_file" -C "$tmp/bundle"
fail() { echo "FAIL: $*"; exit 1; }

"$tmp/bundle/run.sh" "$tmp/plan_results" --plan > "$tmp/plan.txt" 2>&1 || {
  cat "$tmp/plan.txt"; fail "run.sh --plan exited $?"; }
cat "$tmp/plan.txt"
[[ ! -e "$tmp/plan_results" ]] || fail "--plan wrote $tmp/plan_results"
total="$(sed -n 's/^total: \([0-9]*\) s .*/\1/p' "$tmp/plan.txt")"
[[ -n "$total" ]] || fail "the plan prints no total"
(( total <= 540 )) || fail "the plan takes $total s, over the device tool's timeout_s of 540"
grep -q "(cut to [0-9]* s by --budget)" "$tmp/plan.txt" &&
  fail "the parts' budgets add up to more than the default --budget"
parts="$(sed -n 's/^ *[0-9]* *[0-9]* *[0-9]*  \([a-z]*\): .*/\1/p' "$tmp/plan.txt" | tr '\n' ' ')"
[[ "$parts" == "env test train bench torch rest " ]] || fail "parts out of priority order: $parts"
while read -r label how; do
  case "$how" in
    bin/cuda_*) name="$(basename "$how")" ;;
    bin/plugin_conformance) name="plugin_conformance(cuda)" ;;
    *) fail "$label: the device check does not know how to run '$how'" ;;
  esac
  grep -qF "    $name  (<=" "$tmp/plan.txt" || fail "$label ($name) is not in the plan"
done < "$tmp/bundle/GPU_TESTS"

"$tmp/bundle/run.sh" "$tmp/results" > "$tmp/out.txt" 2>&1
rc=$?
cat "$tmp/out.txt"
(( rc == 0 )) || fail "run.sh exited $rc"
files="$(find "$tmp/results" -type f | wc -l)"
(( files >= 1 && files <= 8 )) || fail "$files result files (at most 8 come back from the device tool)"
[[ -z "$(find "$tmp/results" -mindepth 1 -type d)" ]] || fail "results must be flat"
for f in summary.md results.tsv environment.txt check.log bench.csv; do
  [[ -f "$tmp/results/$f" ]] || fail "no $f"
done
summary="$tmp/results/summary.md"
grep -q "^| [^|]* | \(FAIL\|TIMEOUT\|CUT\|RUNNING\) |" "$summary" && fail "a FAIL, TIMEOUT, CUT or RUNNING item without a GPU"
while read -r label how; do
  case "$how" in
    bin/cuda_*) t="$(basename "$how")"
      # SKIPPED, or PASS for the tests that need no device with the others skipped.
      grep -q "^| $t | \(SKIPPED\|PASS\) | .* | .*no CUDA device" "$summary" || fail "$label ($t) did not skip for want of a device" ;;
    bin/plugin_conformance)
      grep -q "^| plugin_conformance(cuda) | SKIPPED | .*no CUDA device" "$summary" || fail "$label did not run as plugin_conformance(cuda)" ;;
  esac
done < "$tmp/bundle/GPU_TESTS"
n_train="$(grep -c '^| train \(mlp\|cnn\|gpt2\) \(fp32\|tf32\|bf16\|fp16\) | SKIPPED | .* | no CUDA device |' "$summary")"
(( n_train == 12 )) || fail "$n_train of 12 train runs skipped for want of a device"
# GPT-2 124M in fp8 (FP8 GEMMs), the same job as bf16's, reported the same way.
grep -q '^| train gpt2 fp8 | SKIPPED | .* | no CUDA device |' "$summary" ||
  fail "train gpt2 fp8 did not skip for want of a device"
# GPT-2 124M in bf16 with each memory-light optimizer.
for o in adamw8bit adafactor; do
  grep -q "^| train gpt2 bf16 $o | SKIPPED | .* | no CUDA device |" "$summary" ||
    fail "train gpt2 bf16 $o did not skip for want of a device"
done
n_train_all="$(grep -c '^| train ' "$summary")"
(( n_train_all == 15 )) || fail "$n_train_all train rows, expected 15 (12 + 2 optimizers + gpt2 fp8)"
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
env_txt="$tmp/results/environment.txt"
head -8 "$env_txt" | grep -q "^Python with torch" || fail "environment.txt does not begin with the interpreter"
grep -q "^  chosen: " "$env_txt" || fail "environment.txt does not say which interpreter was chosen"
grep -q "^  libcublasLt.so.13: " "$env_txt" || fail "environment.txt does not say which cuBLASLt was used"
grep -q "^\[cuda_kernels_test\] " "$tmp/results/check.log" || fail "check.log lacks the tests' output"
echo "PASS: the plan takes $total s of 540; the device check ran end to end without a GPU ($files files)"
