#!/bin/bash
# Trains a tiny GPT (1 layer, d 32, context 16) on a repeated sentence with
# //:train for 200 steps, then greedy-samples the checkpoint: the model must
# continue the sentence. Also: same seed, same sample; a missing checkpoint is
# one line.
set -euo pipefail
train="$1"
sample="$2"
dir="${TEST_TMPDIR:-/tmp}/sample"
mkdir -p "$dir"
for i in $(seq 60); do printf 'the quick brown fox jumps over the lazy dog. '; done > "$dir/text.txt"
root="${TEST_SRCDIR}/mantissa"
plugins="$root/plugins/backends/cpu:$root/plugins/precisions:$root/models/gpt2"
"$train" --model=gpt2 --model_options=n_layer=1,n_head=2,d_model=32,seq_len=16 \
  --dataset=text --text_path="$dir/text.txt" --seq_len=16 --batch_size=16 \
  --steps=200 --lr=1e-2 --warmup_steps=10 --device=cpu --precision=fp32 \
  --progress=none --log_every=100 --eval_every=0 --checkpoint_dir="$dir/run" \
  --plugin_path="$plugins" --cache_dir="$dir/cache" > "$dir/train.log" 2>&1 ||
  { cat "$dir/train.log"; exit 1; }
tail -3 "$dir/train.log"
out=$("$sample" --checkpoint="$dir/run/latest" --prompt='the quick ' --tokens=40 --temperature=0)
echo "greedy: $out"
[[ "$out" == "the quick brown fox jumps over the lazy dog"* ]] || { echo "FAIL: greedy sample does not continue the sentence"; exit 1; }
a=$("$sample" --checkpoint="$dir/run/latest" --prompt='the ' --tokens=30 --seed=7)
b=$("$sample" --checkpoint="$dir/run/latest" --prompt='the ' --tokens=30 --seed=7)
echo "sampled: $a"
[[ "$a" == "$b" ]] || { echo "FAIL: same seed gave different samples"; exit 1; }
if "$sample" --checkpoint="$dir/missing" 2>"$dir/err"; then echo "FAIL: missing checkpoint accepted"; exit 1; fi
[[ $(wc -l < "$dir/err") == 1 ]] || { cat "$dir/err"; exit 1; }
grep -q '^sample: error: ' "$dir/err" || { cat "$dir/err"; exit 1; }
echo PASS
