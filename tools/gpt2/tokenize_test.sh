#!/bin/bash
# The tokenize tool writes llm.c shards whose sizes add up to the input.
set -euo pipefail
tool="$1"
dir="${TEST_TMPDIR:-/tmp}/tok"
mkdir -p "$dir"
printf 'hello world, this is text.\n%.0s' {1..40} > "$dir/in.txt"
"$tool" --input="$dir/in.txt" --output_prefix="$dir/out" --val_fraction=0.25 --shard_tokens=300
total=$(( $(stat -c %s "$dir/in.txt") ))
sum=0
for f in "$dir"/out_*.bin; do
  magic=$(od -An -t d4 -N 4 "$f" | tr -d ' ')
  [[ "$magic" == 20240520 ]] || { echo "bad magic $magic in $f"; exit 1; }
  sum=$(( sum + ($(stat -c %s "$f") - 1024) / 2 ))
done
[[ "$sum" == "$total" ]] || { echo "tokens $sum != bytes $total"; exit 1; }
[[ -f "$dir/out_train_002.bin" ]] || { echo "expected 3 train shards"; exit 1; }
if "$tool" --input="$dir/missing.txt" --output_prefix="$dir/x" 2>"$dir/err"; then exit 1; fi
[[ $(wc -l < "$dir/err") == 1 ]] || { cat "$dir/err"; exit 1; }
# A directory or device where a text file is expected: one line, nothing written.
for bad in "$dir" /dev/zero; do
  if "$tool" --input="$bad" --output_prefix="$dir/bad" 2>"$dir/err"; then exit 1; fi
  [[ $(wc -l < "$dir/err") == 1 ]] || { cat "$dir/err"; exit 1; }
  if compgen -G "$dir/bad_*" >/dev/null; then echo "wrote shards for $bad"; exit 1; fi
done
echo PASS
