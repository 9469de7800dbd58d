#!/bin/bash
# --dataset=text --tokenizer=sentencepiece end to end: train trains a BPE
# model on the text and a tiny GPT on its tokens, keeps the model beside the
# checkpoints (tokenizer.model, named by the saved config); greedy sampling
# with it continues the sentence in subwords decoded back to text; the saved
# config evaluates the run from another directory; a second run reuses the
# cached model; the tokens are kept as llm.c shards beside the model, and
# --dataset=shards on them trains exactly as the text run (same losses); a
# vocabulary past uint16 is refused in one line; a bad --tokenizer is one line.
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
# The tokens as llm.c shards in the cache, beside the model (its key).
line=$(grep '^tokens: ' "$dir/train.log") || { cat "$dir/train.log"; echo "FAIL: no tokens: line"; exit 1; }
re='^tokens: ([^ ]+) \(([0-9]+) tokens\), ([^ ]+) \(([0-9]+)\)$'
[[ "$line" =~ $re ]] || { echo "FAIL: tokens line: $line"; exit 1; }
train_shard=${BASH_REMATCH[1]} n_train=${BASH_REMATCH[2]} val_shard=${BASH_REMATCH[3]} n_val=${BASH_REMATCH[4]}
model=$(ls "$dir"/cache/tokenizers/bpe-300-*.model)
[[ "$train_shard" == "${model%.model}-val"*"_train_000.bin" && "$val_shard" == "${model%.model}-val"*"_val_000.bin" ]] ||
  { echo "FAIL: shards $train_shard $val_shard not named like $model"; exit 1; }
grep -q "data: $dir/text.txt, $n_train training and $n_val evaluation tokens" "$dir/train.log" ||
  { cat "$dir/train.log"; echo "FAIL: the shards' counts are not the text run's"; exit 1; }
for pair in "$train_shard:$n_train" "$val_shard:$n_val"; do
  f=${pair%:*} n=${pair#*:}
  read -r magic version count < <(od -An -t d4 -N 12 "$f")
  [[ "$magic" == 20240520 && "$version" == 1 && "$count" == "$n" ]] ||
    { echo "FAIL: $f header: magic $magic version $version count $count (expected $n)"; exit 1; }
  [[ $(stat -c %s "$f") == $(( 1024 + 2 * count )) ]] ||
    { echo "FAIL: $f is $(stat -c %s "$f") bytes, not 1024 + 2 x $count"; exit 1; }
  # uint16 tokens, every one inside the vocabulary.
  max=$(od -An -v -t u2 -j 1024 "$f" | tr -s ' ' '\n' | sort -n | tail -1)
  (( max < 300 )) || { echo "FAIL: $f holds token $max >= 300"; exit 1; }
done
# The same tokens: --dataset=shards on them trains and evaluates exactly as
# the text run with the same seed (every logged loss equal).
short=(--model=gpt2 --model_options=n_layer=1,n_head=2,d_model=32,seq_len=16 --seq_len=16
  --batch_size=16 --lr=1e-2 --warmup_steps=10 --device=cpu --precision=fp32 --progress=plain
  --log_every=1 --eval_every=0 --steps=3 --seed=5 --checkpoint_dir=none --cache_dir="$dir/cache")
"$train" "${short[@]}" --dataset=text --text_path="$dir/text.txt" --tokenizer=sentencepiece \
  --vocab_size=300 > "$dir/text3.log" 2>&1 || { cat "$dir/text3.log"; exit 1; }
"$train" "${short[@]}" --dataset=shards --train_shards="$train_shard" --val_shards="$val_shard" \
  --vocab_size=300 > "$dir/shards3.log" 2>&1 || { cat "$dir/shards3.log"; exit 1; }
grep -q "data: $train_shard, $n_train training and $n_val evaluation tokens, vocabulary 300" \
  "$dir/shards3.log" || { cat "$dir/shards3.log"; echo "FAIL: the shards run's data line"; exit 1; }
losses() { grep -oE '^(step [0-9]+/[0-9]+ \([0-9.]+%\)  loss [0-9.]+|eval  step [0-9]+  loss [0-9.]+)' "$1"; }
[[ $(losses "$dir/text3.log" | wc -l) == 4 ]] || { cat "$dir/text3.log"; echo "FAIL: expected 3 steps and an eval"; exit 1; }
diff <(losses "$dir/text3.log") <(losses "$dir/shards3.log") ||
  { echo "FAIL: --dataset=shards does not train like --dataset=text on the same tokens"; exit 1; }
# Byte-level text goes the same way: one shard token per byte of the text.
"$train" "${short[@]}" --steps=1 --dataset=text --text_path="$dir/text.txt" > "$dir/bytes.log" 2>&1 ||
  { cat "$dir/bytes.log"; exit 1; }
line=$(grep '^tokens: ' "$dir/bytes.log") && [[ "$line" =~ $re ]] ||
  { cat "$dir/bytes.log"; echo "FAIL: no tokens: line for byte-level text"; exit 1; }
[[ "${BASH_REMATCH[1]}" == "$dir/cache/tokenizers/bytes-256-"*"-val"*"_train_000.bin" &&
   $(( BASH_REMATCH[2] + BASH_REMATCH[4] )) == $(stat -c %s "$dir/text.txt") ]] ||
  { echo "FAIL: byte-level shards: $line"; exit 1; }
# uint16 tokens: a larger vocabulary is refused before any training.
if "$train" "${common[@]}" --vocab_size=70000 --steps=1 --checkpoint_dir=none 2>"$dir/big.err"; then
  echo "FAIL: --vocab_size=70000 accepted"; exit 1
fi
[[ $(wc -l < "$dir/big.err") -eq 1 ]] &&
  grep -q "^mantissa: error: --vocab_size=70000: .*uint16 tokens.* at most 65536" "$dir/big.err" ||
  { cat "$dir/big.err"; echo "FAIL: --vocab_size=70000 not refused in one line"; exit 1; }
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
