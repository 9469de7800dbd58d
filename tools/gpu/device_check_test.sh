#!/usr/bin/env bash
# The device check end to end from the unpacked bundle on a machine without a
# GPU (CI): it must finish, exit 0, write at most 8 flat files, and report the
# GPU parts as skipped for want of a device (never FAIL or TIMEOUT), every
# benchmark row with a reason, and the PyTorch side as skipped.
set -uo pipefail
tar_file="$1"
tmp="${TEST_TMPDIR:-$(mktemp -d)}/device_check"
rm -rf "$tmp"
mkdir -p "$tmp/bundle"
tar -xf "$tar_file" -C "$tmp/bundle"
"$tmp/bundle/run.sh" "$tmp/results" --budget=240 > "$tmp/out.txt" 2>&1
rc=$?
cat "$tmp/out.txt"
fail() { echo "FAIL: $*"; exit 1; }
(( rc == 0 )) || fail "run.sh exited $rc"
files="$(find "$tmp/results" -type f | wc -l)"
(( files >= 1 && files <= 8 )) || fail "$files result files (at most 8 come back from the device tool)"
[[ -z "$(find "$tmp/results" -mindepth 1 -type d)" ]] || fail "results must be flat"
summary="$tmp/results/summary.md"
[[ -f "$summary" ]] || fail "no summary.md"
grep -q "FAIL\|TIMEOUT" "$summary" && fail "a FAIL or TIMEOUT row without a GPU"
for t in "$tmp"/bundle/bin/cuda_*test; do
  grep -q "| $(basename "$t") | .*no CUDA device" "$summary" || fail "$(basename "$t") did not skip for want of a device"
done
n_train="$(grep -c '^| \(mlp\|cnn\|gpt2\) | .* | SKIPPED (no CUDA device) |' "$summary")"
(( n_train == 12 )) || fail "$n_train of 12 train runs skipped for want of a device"
rows="$(grep -c '^| \(fp32\|tf32\|bf16\|fp16\) | \(8\|16\) | \(on\|off\) | SKIPPED: no CUDA device' "$summary")"
(( rows == 16 )) || fail "$rows of 16 benchmark rows say 'no CUDA device' for Mantissa"
grep -q "PyTorch\|pytorch" "$summary" || fail "no PyTorch column"
n_torch="$(grep -c 'SKIPPED: torch' "$summary")"
(( n_torch == 16 )) || fail "$n_torch of 16 PyTorch cells say why they were skipped"
n_goals="$(grep -c '^| .* | NOT-RUN | ' "$summary")"
(( n_goals == 6 )) || fail "$n_goals of 6 goals NOT-RUN (each with the row it lacks)"
grep -q '^Goals: 6 NOT-RUN\.$' "$summary" || fail "no goal count line"
grep -q "libcublasLt.so.13: " "$tmp/results/environment.txt" || fail "environment.txt does not say which cuBLASLt was used"
echo "PASS: device check ran end to end without a GPU ($files files)"
