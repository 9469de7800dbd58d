#!/bin/bash
# Trains a tiny GPT (1 layer, d 32, context 16) on a repeated sentence with
# //:train for 200 steps, then greedy-samples the checkpoint: the model must
# continue the sentence. Also: same seed, same sample; a missing checkpoint is
# one line; a checkpoint directory means its latest; without --checkpoint the
# newest gpt2 run's (train without --checkpoint_dir keeps its own folder),
# and the checkpoint used is named on stderr.
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
grep -q "^sample: error: --checkpoint=$dir/missing: no such run folder or checkpoint" "$dir/err" || { cat "$dir/err"; exit 1; }
# The train CLI's manners: a mistyped flag is one line with a suggestion.
if "$sample" --promt=x 2>"$dir/err_flag"; then echo "FAIL: a mistyped flag was accepted"; exit 1; fi
grep -q "^sample: error: unknown flag --promt (did you mean --prompt?)" "$dir/err_flag" || { cat "$dir/err_flag"; exit 1; }
# A directory: its latest, named on stderr.
"$sample" --checkpoint="$dir/run" --prompt='the ' --tokens=5 > /dev/null 2> "$dir/err_dir"
grep -q "^sample: checkpoint $dir/run/latest (step 200)$" "$dir/err_dir" || { cat "$dir/err_dir"; echo "FAIL: directory not resolved or not named"; exit 1; }
# No --checkpoint_dir: the run keeps its own folder; sample finds the newest.
XDG_CACHE_HOME="$dir/xdg" "$train" --model=gpt2 --model_options=n_layer=1,n_head=2,d_model=32,seq_len=16 \
  --dataset=text --text_path="$dir/text.txt" --seq_len=16 --batch_size=16 --steps=3 \
  --device=cpu --precision=fp32 --progress=plain --eval_every=0 --plugin_path="$plugins" \
  > "$dir/train2.log" 2>&1 || { cat "$dir/train2.log"; exit 1; }
grep -q "checkpoints: $dir/xdg/mantissa/runs/gpt2-text-fp32 (this run's own folder" "$dir/train2.log" || { cat "$dir/train2.log"; echo "FAIL: the run's own folder not said"; exit 1; }
XDG_CACHE_HOME="$dir/xdg" "$sample" --prompt='the ' --tokens=5 > /dev/null 2> "$dir/err_default"
grep -q "^sample: checkpoint $dir/xdg/mantissa/runs/gpt2-text-fp32/latest (step 3)$" "$dir/err_default" || { cat "$dir/err_default"; echo "FAIL: the newest run's checkpoint not used"; exit 1; }
if XDG_CACHE_HOME="$dir/empty" "$sample" 2>"$dir/err_none"; then echo "FAIL: sampled without a checkpoint"; exit 1; fi
grep -q "^sample: error: no gpt2 checkpoint at $dir/empty/mantissa/runs/gpt2-\*/latest" "$dir/err_none" || { cat "$dir/err_none"; exit 1; }
echo PASS
