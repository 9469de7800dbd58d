#!/bin/bash
# --dataset=text --tokenizer=sentencepiece end to end: train trains a BPE
# model on the text and a tiny GPT on its tokens, keeps the model beside the
# checkpoints (tokenizer.model, named by the saved config); greedy sampling
# with it continues the sentence in subwords decoded back to text; the saved
# config evaluates the run from another directory; a second run reuses the
# cached model; a bad --tokenizer is one line.
set -euo pipefail
train="$(realpath "$1")"
sample="$(realpath "$2")"
dir="${TEST_TMPDIR:-/tmp}/sentencepiece"
mkdir -p "$dir"
for i in $(seq 200); do printf 'the quick brown fox jumps over the lazy dog. '; done > "$dir/text.txt"
common=(--model=gpt2 --model_options=n_layer=1,n_head=2,d_model=32,seq_len=16
  --dataset=text --text_path="$dir/text.txt" --tokenizer=sentencepiece --vocab_size=300
  --seq_len=16 --batch_size=16 --lr=1e-2 --warmup_steps=10 --device=cpu --precision=fp32
  --progress=plain --log_every=100 --eval_every=0 --cache_dir="$dir/cache")
"$train" "${common[@]}" --steps=200 --checkpoint_dir="$dir/run" > "$dir/train.log" 2>&1 ||
  { cat "$dir/train.log"; exit 1; }
grep -q "SentencePiece bpe vocabulary 300 (trained: " "$dir/train.log" ||
  { cat "$dir/train.log"; echo "FAIL: no trained tokenizer named"; exit 1; }
[[ -f "$dir/run/tokenizer.model" ]] || { echo "FAIL: no tokenizer.model beside the checkpoints"; exit 1; }
grep -q "tokenizer_model: \"$dir/run/tokenizer.model\"" "$dir/run/train_config.txtpb" ||
  { cat "$dir/run/train_config.txtpb"; echo "FAIL: the saved config does not name it"; exit 1; }
out=$("$sample" --checkpoint="$dir/run" --prompt='the quick ' --tokens=40 --temperature=0 2>"$dir/sample.err")
echo "greedy: $out"
grep -q "sample: tokenizer $dir/run/tokenizer.model" "$dir/sample.err" ||
  { cat "$dir/sample.err"; echo "FAIL: sample did not say which tokenizer"; exit 1; }
[[ "$out" == "the quick brown fox jumps over the lazy dog"* ]] ||
  { echo "FAIL: greedy sample does not continue the sentence"; exit 1; }
# The saved config, from another directory.
(cd / && "$train" --config="$dir/run/train_config.txtpb" --eval_only --resume) > "$dir/eval.log" 2>&1 ||
  { cat "$dir/eval.log"; exit 1; }
grep -q "eval of $dir/run/latest (step 200): loss " "$dir/eval.log" || { cat "$dir/eval.log"; exit 1; }
# The same text and options again: the cached model.
"$train" "${common[@]}" --steps=2 --checkpoint_dir=none > "$dir/again.log" 2>&1 ||
  { cat "$dir/again.log"; exit 1; }
grep -q "SentencePiece bpe vocabulary 300 (model " "$dir/again.log" ||
  { cat "$dir/again.log"; echo "FAIL: the cached model was not reused"; exit 1; }
if "$train" --dataset=text --text_path="$dir/text.txt" --tokenizer=wordpiece 2>"$dir/bad.err"; then
  echo "FAIL: --tokenizer=wordpiece accepted"; exit 1
fi
[[ $(wc -l < "$dir/bad.err") -eq 1 ]] && grep -q "is not bytes or sentencepiece" "$dir/bad.err" ||
  { cat "$dir/bad.err"; echo "FAIL: not one clear line"; exit 1; }
"$train" --dataset=digits --model=mlp --tokenizer=sentencepiece 2>"$dir/bad2.err" && { echo "FAIL: sentencepiece on digits accepted"; exit 1; }
grep -q "tokenizes --dataset=text" "$dir/bad2.err" || { cat "$dir/bad2.err"; exit 1; }
echo PASS
