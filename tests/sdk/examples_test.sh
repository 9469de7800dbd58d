#!/usr/bin/env bash
# The newcomer's path from docs/plugins.md, end to end and without Bazel:
# unpack the SDK bundle, build the example plugins with g++ and pkg-config,
# check them with the bundle's plugin_info and plugin_conformance, and train
# with them through the bundle's unmodified bin/train: the raw-ABI linear
# model of the first tutorial unchanged (and under --precision=fp8, where its
# GEMMs run in bf16), and resmlp, written on the SDK's model layer, in all
# five precisions, with checkpointing, the bundle's memory estimate and
# precision report, --debug_overflow and its declared data. Also proves the
# conformance suite catches real bugs: a backoff that does not back off, a
# gradient off by a factor, a model that ignores the activation dtype and one
# that forgets to recompute under checkpointing must all fail it.
set -euo pipefail
bundle="$1"
here="$(dirname "$0")"

fail() { echo "FAIL: $*" >&2; exit 1; }
work="${TEST_TMPDIR:-$(mktemp -d)}/sdk_examples"
rm -rf "$work" && mkdir -p "$work"

tar -xzf "$bundle" -C "$work"
sdk="$work/mantissa_sdk"
export PKG_CONFIG_PATH="$sdk/lib/pkgconfig"
echo "pkg-config: mantissa $(pkg-config --modversion mantissa), cflags $(pkg-config --cflags mantissa)"

# Build the examples exactly as their READMEs say (copies, as a user would):
# their Makefiles use the documented flags, -Wall -Wextra -Werror.
cp -r "$sdk/share/mantissa/examples" "$work/src"
for example in precision_plugin model_plugin resmlp_model; do
  make -C "$work/src/$example" | tee "$work/make_$example.log"
  grep -q -- '-Wall -Wextra -Werror' "$work/make_$example.log" \
    || fail "$example: its Makefile does not build with -Wall -Wextra -Werror"
done

# They stay warning-clean when a later minor appends to their tables: they
# fill them with the SDK's makers, never positionally. A copy of the headers
# with a member appended to each table stands in for that minor.
grown="$work/grown_include"
cp -r "$sdk/include/mantissa" "$grown"
sed -i 's|^\(  MNT_Precision_GetScalingRecipe\* Precision_GetScalingRecipe;\)$|\1 void* appended_later;|' \
  "$grown/plugins/abi/mnt_precision.h"
sed -i 's|^\(  MNT_Model_Backward\* Model_Backward;\)$|\1 void* appended_later;|' \
  "$grown/plugins/abi/mnt_model.h"
[[ "$(cat "$grown"/plugins/abi/mnt_{precision,model}.h | grep -c appended_later)" == 2 ]] \
  || fail "sed did not grow the precision and model tables"
for src in precision_plugin/fp16_floor model_plugin/linear_model resmlp_model/resmlp; do
  g++ -std=c++17 -O2 -Wall -Wextra -Werror -shared -fPIC -I"$grown" "$work/src/$src.cc" \
    -o "$work/grown_$(basename "$src").so" $(pkg-config --variable=plugin_ldflags mantissa) \
    || fail "$src.cc is not -Werror clean once its table grows"
done
echo "ok: the examples build with -Wall -Wextra -Werror, also against grown tables"
plugins="$work/plugins"
mkdir -p "$plugins"
cp "$work/src/precision_plugin/mnt_precision_fp16_floor.so" \
   "$work/src/model_plugin/mnt_model_linear.so" "$work/src/resmlp_model/mnt_model_resmlp.so" \
   "$plugins/"

# Both tools take a bare file name in the current directory (not a library
# search through dlopen's path).
(cd "$plugins" && "$sdk/bin/plugin_info" mnt_precision_fp16_floor.so > "$work/bare_info.txt") \
  || { cat "$work/bare_info.txt"; fail "plugin_info refuses a bare file name"; }
grep -q '^name: *fp16_floor$' "$work/bare_info.txt" || fail "plugin_info on a bare name: $(cat "$work/bare_info.txt")"
(cd "$plugins" && "$sdk/bin/plugin_conformance" mnt_model_linear.so > "$work/bare_conformance.txt") \
  || { cat "$work/bare_conformance.txt"; fail "plugin_conformance refuses a bare file name"; }
grep -q '^conformance: [1-9][0-9]* passed, 0 failed' "$work/bare_conformance.txt" || fail "no checks ran on a bare name"

for so in "$plugins"/*.so; do
  "$sdk/bin/plugin_info" "$so" | tee "$work/info.txt"
  grep -q '^exports: *MNT_GetPluginApi$' "$work/info.txt" || fail "$so exports more than the entry symbol"
  "$sdk/bin/plugin_conformance" "$so" | tee "$work/conformance.txt" \
    || fail "$so does not pass plugin_conformance"
  grep -q '^conformance: [1-9][0-9]* passed, 0 failed' "$work/conformance.txt" || fail "no checks ran"
done
# The model layer's model gets the stronger checks: 16-bit storage, FP8
# GEMMs and checkpointing, against its own fp32 run.
"$sdk/bin/plugin_conformance" "$plugins/mnt_model_resmlp.so" > "$work/resmlp_conformance.txt"
for check in features/storage/bf16 features/storage/f16 features/fp8_gemms features/checkpointing/f32 \
             features/checkpointing/bf16 images/checkpointing/f16; do
  grep -q "^\[PASS\] model/$check" "$work/resmlp_conformance.txt" \
    || { cat "$work/resmlp_conformance.txt"; fail "resmlp: no passing $check check"; }
done
echo "ok: resmlp passes conformance in bf16, fp16, FP8 GEMMs and with checkpointing"

# The bundle's bin/train finds the bundle's own plugins without
# --plugin_path (bin/../lib/mantissa/plugins), from any directory, and its
# default job (gpt2 on Debian's fortunes) runs; two steps here.
(cd "$work" && "$sdk/bin/train" --steps=2 --eval_batches=1 --progress=plain \
   --cache_dir="$work/cache" --checkpoint_dir="$work/default_job" > "$work/default_job.log" 2>&1) \
  || { cat "$work/default_job.log"; fail "the bundle's default job failed"; }
grep -q '^model *gpt2' "$work/default_job.log" || { cat "$work/default_job.log"; fail "the default job is not gpt2"; }
[[ -f "$work/default_job/checkpoint-2" ]] || fail "the default job wrote no checkpoint"
echo "ok: the bundle's bin/train runs its default job with its own plugins"

# Train through the released trainer with the new plugins (and the bundled
# backend), and check the run learned something.
train() {
  local log="$work/train_$1_$2.log"
  "$sdk/bin/train" --plugin_path="$plugins" \
    --dataset=digits --model="$1" --precision="$2" --steps="$3" --progress=none \
    --cache_dir="$work/cache" >"$log" 2>&1 || { cat "$log"; fail "train --model=$1 --precision=$2 exited $?"; }
  cat "$log"
  grep -q "^precision  $2\$" "$log" || fail "report does not name precision $2"
  local line loss acc
  line="$(grep -E '^eval +loss ' "$log" | tail -1)"
  loss="$(sed -E 's/^eval +loss ([^,]*),.*/\1/' <<<"$line")"
  acc="$(sed -E 's/.*accuracy ([0-9.]+)%.*/\1/' <<<"$line")"
  # Chance is loss ln(10) = 2.303 and 10% accuracy on the 10 digit classes.
  awk -v l="$loss" -v a="$acc" -v min="$4" 'BEGIN {
    if (!(l + 0 == l && l > 0 && l < 2.2 && a + 0 >= min)) exit 1 }' \
    || fail "$1/$2: eval loss '$loss', accuracy '$acc'% (want loss < 2.2, accuracy >= $4%)"
  echo "ok: $1 with $2: eval loss $loss, accuracy $acc%"
}
train linear fp16_floor 200 70
train mlp fp16_floor 200 70
train linear bf16 200 70
for precision in fp32 tf32 bf16 fp16 fp8; do
  train resmlp "$precision" 200 90
done
grep -q '^FP8 GEMMs: f8_e4m3 forward, f8_e5m2 gradients' "$work/train_resmlp_fp8.log" \
  || fail "resmlp's fp8 run does not run its GEMMs in FP8"

# A model of the first tutorial (raw ops, no FP8 GEMMs) under fp8: its GEMMs
# run in bf16, said once, and the run is the bf16 run, loss for loss.
for precision in bf16 fp8; do
  "$sdk/bin/train" --plugin_path="$plugins" --dataset=digits --model=linear --precision="$precision" \
    --steps=30 --progress=none --cache_dir="$work/cache" --checkpoint_dir=none \
    --metrics_jsonl="$work/linear_$precision.jsonl" > "$work/linear_$precision.log" 2>&1 \
    || { cat "$work/linear_$precision.log"; fail "linear with $precision failed"; }
done
[[ "$(grep -c "^FP8 GEMMs: model 'linear' has none" "$work/linear_fp8.log")" == 1 ]] \
  || { cat "$work/linear_fp8.log"; fail "the fp8 run does not say once that linear's GEMMs run in bf16"; }
python3 - "$work/linear_bf16.jsonl" "$work/linear_fp8.jsonl" <<'PY' || fail "linear's fp8 run is not its bf16 run"
import json, sys
runs = [[(r["step"], r["loss"]) for r in map(json.loads, open(p)) if r["type"] == "train"]
        for p in sys.argv[1:]]
assert len(runs[0]) == 30 and runs[0] == runs[1], runs
PY
echo "ok: linear under --precision=fp8 runs its GEMMs in bf16 and says so once"

# Checkpointing: --gradient_checkpointing reaches resmlp as checkpointing=1;
# the same run, in less activation memory.
resmlp_run() {
  "$sdk/bin/train" --plugin_path="$plugins" --dataset=digits --model=resmlp --progress=none \
    --cache_dir="$work/cache" --checkpoint_dir=none --batch_size=64 "$@"
}
for ckpt in "" --gradient_checkpointing; do
  resmlp_run --precision=bf16 --steps=30 --model_options=blocks=4 $ckpt \
    --metrics_jsonl="$work/ckpt${ckpt:+_on}.jsonl" > "$work/ckpt${ckpt:+_on}.log" 2>&1 \
    || { cat "$work/ckpt${ckpt:+_on}.log"; fail "resmlp ${ckpt:-without checkpointing} failed"; }
done
python3 - "$work/ckpt.jsonl" "$work/ckpt_on.jsonl" <<'PY' || fail "checkpointing changed resmlp's run"
import json, sys
runs = [[(r["step"], r["loss"]) for r in map(json.loads, open(p)) if r["type"] == "train"]
        for p in sys.argv[1:]]
assert len(runs[0]) == 30 and runs[0] == runs[1], runs
PY
act() { awk '$1 == "activations" { print $4, $5 }' "$1"; }
kib() { awk -v v="$1" -v u="$2" 'BEGIN { print v * (u == "MiB" ? 1024 : 1) }'; }
plain="$(kib $(act "$work/ckpt.log"))" on="$(kib $(act "$work/ckpt_on.log"))"
awk -v a="$plain" -v b="$on" 'BEGIN { exit !(b > 0 && b < 0.75 * a) }' \
  || fail "checkpointing kept ${on} KiB of activations, without ${plain} KiB"
echo "ok: resmlp with checkpointing: the same losses, activations ${on} KiB instead of ${plain} KiB"

# The memory report: the bundle's estimate is what the run measures, as for
# a built-in model.
for precision in fp32 fp8; do
  resmlp_run --precision="$precision" --steps=2 > "$work/mem_$precision.log" 2>&1 \
    || { cat "$work/mem_$precision.log"; fail "resmlp $precision for the memory report failed"; }
  measured="$(awk '$1 == "total" && NF == 5 { print $4, $5 }' "$work/mem_$precision.log")"
  "$sdk/bin/memory_estimate" --plugin_path="$plugins" --model=resmlp --batch_sizes=64 \
    --precisions="$precision" > "$work/estimate_$precision.txt" \
    || { cat "$work/estimate_$precision.txt"; fail "memory_estimate refused resmlp"; }
  estimated="$(awk '$1 == "total" { print $2, $3 }' "$work/estimate_$precision.txt")"
  [[ -n "$measured" && "$measured" == "$estimated" ]] \
    || fail "resmlp $precision: the run's peak is '$measured', the estimate '$estimated'"
  echo "ok: resmlp $precision: memory_estimate says $estimated, the run peaks at $measured"
done

# --debug_overflow names resmlp's layers as it names the built-in MLP's: a
# loss scale of 2^40 overflows fp16 in the first backward op, the loss's,
# which reads the head's logits.
for model in mlp:layer2 resmlp:head; do
  "$sdk/bin/train" --plugin_path="$plugins" --dataset=digits --model="${model%%:*}" --precision=fp16 \
    --steps=2 --progress=none --cache_dir="$work/cache" --checkpoint_dir=none --debug_overflow \
    --init_scale=1099511627776 > "$work/overflow_${model%%:*}.log" 2>&1 && fail "${model%%:*}: no overflow"
  grep -q "^mantissa: error: step 1: --debug_overflow: in backward, op #[0-9]* CROSS_ENTROPY in layer '${model#*:}'" \
    "$work/overflow_${model%%:*}.log" || { cat "$work/overflow_${model%%:*}.log"; fail "${model%%:*}: the overflow is not named"; }
  grep -q "^      in\[1\] targets " "$work/overflow_${model%%:*}.log" \
    || { cat "$work/overflow_${model%%:*}.log"; fail "${model%%:*}: the targets are not named"; }
done
echo "ok: --debug_overflow names the layer of a backward op in resmlp as in the mlp"

# Its declared data: without --dataset (the default, GPT-2's text) the run is
# refused in one line naming what it takes.
if "$sdk/bin/train" --plugin_path="$plugins" --model=resmlp --steps=1 --cache_dir="$work/cache" \
     > "$work/no_dataset.log" 2>&1; then
  fail "resmlp trained on the default dataset"
fi
grep -q "^mantissa: error: --model=resmlp does not train on --dataset=fortunes: resmlp takes labelled feature vectors or labelled images (--dataset=digits|idx)" \
  "$work/no_dataset.log" || { cat "$work/no_dataset.log"; fail "the refusal does not name resmlp's data"; }

# The bundle's precision report on resmlp (python3 with matplotlib).
"$sdk/bin/precision_report" --out="$work/report" --plugin_path="$plugins" --model=resmlp \
  --dataset=digits --steps=40 --timing_repeats=1 --timing_steps=10 --cache_dir="$work/cache" \
  > "$work/report.log" 2>&1 || { cat "$work/report.log"; fail "bin/precision_report failed"; }
for f in report.md loss.png memory.png summary.csv; do
  [[ -s "$work/report/$f" ]] || fail "the precision report wrote no $f"
done
grep -q 'resmlp' "$work/report/report.md" || fail "the report does not name resmlp"
echo "ok: the bundle's memory estimate, precision report and overflow report work on resmlp"

# LoRA reaches a model built from the bundle through the SDK's model layer,
# without model code: only the adapters train (resmlp's blocks: 2 x fc1 and
# fc2, rank 4). The raw-ABI linear has no MODEL_LORA and is refused in one line.
resmlp_run --precision=bf16 --steps=30 --lora=r=4,alpha=8,targets='block*.fc?.weight' \
  --metrics_jsonl="$work/lora.jsonl" > "$work/lora.log" 2>&1 \
  || { cat "$work/lora.log"; fail "resmlp with --lora failed"; }
grep -q 'trainable parameters' "$work/lora.log" || { cat "$work/lora.log"; fail "the LoRA run does not say what trains"; }
python3 - "$work/lora.jsonl" <<'PY' || { cat "$work/lora.log"; fail "resmlp's LoRA run did not learn"; }
import json, sys
losses = [r["loss"] for r in map(json.loads, open(sys.argv[1])) if "loss" in r]
assert len(losses) >= 2 and all(l == l for l in losses), losses
assert losses[-1] < losses[0], losses
PY
if "$sdk/bin/train" --plugin_path="$plugins" --dataset=digits --model=linear --precision=fp32 --steps=1 --checkpoint_dir=none \
    --cache_dir="$work/cache" --lora=r=4,targets='*' > "$work/lora_linear.log" 2>&1; then
  fail "linear took --lora without MODEL_LORA"
fi
[[ $(grep -c . "$work/lora_linear.log") == 1 ]] && grep -q "^mantissa: error: --lora: model 'linear' does not take LoRA adapters" \
  "$work/lora_linear.log" || { cat "$work/lora_linear.log"; fail "the refusal of --lora for linear is not one line naming it"; }
echo "ok: resmlp trains LoRA adapters from the model layer; linear (no MODEL_LORA) is refused in one line"

# ABI 1.5, the precision plugin's side: its own options (--precision_options),
# the path its declaration picks (the run says which), its own options
# refused in one line, and a stop + --resume that continues bit-identically
# on the host path (where its own floor_hits counter advances and travels in
# the checkpoint).
floor_cmd=("$sdk/bin/train" --plugin_path="$plugins" --dataset=digits --model=mlp
           --precision=fp16_floor --progress=plain --cache_dir="$work/cache" --eval_every=0)
floor_run() { "${floor_cmd[@]}" "$@"; }
floor_run --steps=3 --precision_options=min_scale=2 > "$work/declare.log" 2>&1 \
  || { cat "$work/declare.log"; fail "recipe=declare run failed"; }
grep -q "^loss scaling: on the device (precision 'fp16_floor' declares the dynamic recipe: .*min_scale=2" \
  "$work/declare.log" || { cat "$work/declare.log"; fail "a declared recipe did not take the device path"; }
floor_run --steps=3 --precision_options=recipe=none > "$work/none.log" 2>&1 \
  || { cat "$work/none.log"; fail "recipe=none run failed"; }
grep -q "^loss scaling: on the host (precision 'fp16_floor' declares no loss-scale recipe" \
  "$work/none.log" || { cat "$work/none.log"; fail "no declaration did not keep the host path"; }
if floor_run --steps=1 --precision_options=flor=3 > "$work/bad.log" 2>&1; then
  fail "--precision_options=flor=3 was accepted"
fi
grep -q "^mantissa: error: .*unknown key 'flor'" "$work/bad.log" || { cat "$work/bad.log"; fail "bad option not named"; }

# An initial scale that overflows fp16 and a floor of 2^30: the scale backs
# off to the floor and stays at or above it, on both paths, with the same bits.
opts=(--init_scale=1e15 --growth_interval=5 --seed=7)
for path in declare none; do
  floor_run --steps=40 "${opts[@]}" --precision_options=min_scale=1073741824,max_scale=1e31,recipe=$path \
    --metrics_jsonl="$work/full_$path.jsonl" > "$work/full_$path.log" 2>&1 \
    || { cat "$work/full_$path.log"; fail "40-step run ($path) failed"; }
done
python3 - "$work/full_declare.jsonl" "$work/full_none.jsonl" <<'PY' || fail "floor runs differ or break the floor"
import json, sys
runs = []
for path in sys.argv[1:]:
    steps = [r for r in map(json.loads, open(path)) if r.get("type") == "train"]
    runs.append([(r["step"], r["loss"], r["loss_scale"]) for r in steps])
assert runs[0] == runs[1], "device and host paths differ"
scales = [s for _, _, s in runs[0]]
assert min(scales) >= 1073741824 and 1073741824 in scales, scales
PY
# A real kill -9 mid-run (after checkpoint-15) and --resume, on both paths:
# the final checkpoint is byte-identical to the uninterrupted run's, and so
# are the steps after the resume. The floor sits where this run overflows
# now and then (2^18 mostly clean, 2^19 often not), so steps both apply and
# hit the floor. fp16_floor's own counter (floor_hits, in the checkpoint's
# precision_plugin_state) counts in LossScaler_Update, which only the host
# path calls: there it is > 0 when killed and continues across the resume;
# on the device path the declared recipe runs in MNT_OP_AMP_UPDATE_SCALE,
# the plugin only receives the recipe's state (SetState with no bytes of its
# own) and the counter stays at its initial 0, carried unchanged.
plugin_counter() { python3 "$here/fp16_floor_state.py" "$1"; }
# 400 steps leave the kill room to land mid-run on a busy machine (40 steps
# once ended between two polls, CI's only failure); a run that still
# outruns the kill is started again, up to three times.
kill_steps=400
kill_opts=(--steps=$kill_steps --checkpoint_every=5 --init_scale=393216 --growth_interval=2 --seed=7)
for path in declare none; do
  popt="--precision_options=min_scale=393216,max_scale=1e31,recipe=$path"
  whole="$work/whole_$path" killed="$work/killed_$path"
  rm -rf "$whole"
  floor_run "${kill_opts[@]}" "$popt" --checkpoint_dir="$whole" --metrics_jsonl="$whole.jsonl" \
    > "$whole.log" 2>&1 || { cat "$whole.log"; fail "uninterrupted $path run failed"; }
  for attempt in 1 2 3; do
    rm -rf "$killed"
    # The trainer itself in the background (not a shell function's
    # subshell), so $! is the process that gets the SIGKILL.
    "${floor_cmd[@]}" "${kill_opts[@]}" "$popt" --checkpoint_dir="$killed" > "$killed.first.log" 2>&1 &
    pid=$!
    while [[ ! -e "$killed/checkpoint-15" ]] && kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
    kill -9 "$pid" 2>/dev/null || true
    status=0
    wait "$pid" || status=$?
    (( status == 0 )) || break
    echo "note: attempt $attempt of the $path run finished before the kill; again"
  done
  (( status == 137 )) || { cat "$killed.first.log"; fail "the $path run was not killed by SIGKILL (exit $status)"; }
  ! kill -0 "$pid" 2>/dev/null || fail "the killed $path trainer is still running"
  [[ ! -e "$killed/checkpoint-$kill_steps" ]] || fail "the $path run finished before the kill"
  at_kill="$(ls "$killed" | sed -n 's/^checkpoint-//p' | sort -n | tail -1)"
  hits_at_kill="$(plugin_counter "$killed/latest")"
  floor_run "${kill_opts[@]}" "$popt" --checkpoint_dir="$killed" --resume --metrics_jsonl="$killed.jsonl" \
    > "$killed.second.log" 2>&1 || { cat "$killed.second.log"; fail "resuming the killed $path run failed"; }
  resumed_at="$(sed -n 's/^resumed from .* at step \([0-9]*\)$/\1/p' "$killed.second.log")"
  [[ -n "$resumed_at" ]] || { cat "$killed.second.log"; fail "the killed $path run did not resume"; }
  # latest is the newest complete checkpoint: 10 if the kill came between
  # writing checkpoint-15 and publishing it as latest, else 15 or later.
  (( resumed_at >= 10 && resumed_at < kill_steps )) || fail "$path: resumed at step $resumed_at"
  cmp "$whole/checkpoint-$kill_steps" "$killed/checkpoint-$kill_steps" \
    || fail "$path: the killed and resumed run's final checkpoint differs from the uninterrupted one"
  python3 - "$whole.jsonl" "$killed.jsonl" "$resumed_at" "$kill_steps" <<'PY' || fail "$path: the resumed steps are not bit-identical"
import json, sys
def steps(path):
    last = {}
    for r in map(json.loads, open(path)):
        if r.get("type") == "train":
            last[r["step"]] = (r["loss"], r["loss_scale"], r.get("skipped"))
    return last
whole, resumed = steps(sys.argv[1]), steps(sys.argv[2])
last = int(sys.argv[4])
assert sorted(whole) == list(range(1, last + 1)), sorted(whole)
assert resumed and all(resumed[s] == whole[s] for s in resumed), "a step differs"
assert sorted(resumed) == list(range(int(sys.argv[3]) + 1, last + 1)), sorted(resumed)
assert any(v[2] for v in whole.values()) and not all(v[2] for v in whole.values())
PY
  hits_final="$(plugin_counter "$whole/checkpoint-$kill_steps")"
  if [[ "$path" == none ]]; then
    (( hits_at_kill > 0 && hits_final > hits_at_kill )) \
      || fail "host path: floor_hits $hits_at_kill at the kill, $hits_final at the end (want 0 < kill < end)"
  else
    (( hits_at_kill == 0 && hits_final == 0 )) \
      || fail "device path: floor_hits $hits_at_kill / $hits_final (LossScaler_Update is never called there)"
  fi
  echo "ok: $path path: kill -9 after checkpoint-$at_kill, resumed at step $resumed_at to step $kill_steps bit-identically (floor_hits $hits_at_kill -> $hits_final)"
done
echo "ok: fp16_floor's own options, declaration, paths and resume"

# Bugs the suite must catch.
mkdir -p "$work/broken"
sed 's/static_cast<double>(s.scale) \* c.backoff_factor/static_cast<double>(s.scale)/' \
  "$work/src/precision_plugin/fp16_floor.cc" > "$work/broken/fp16_floor.cc"
sed 's|1.0f / static_cast<float>(batch);|1.0f / static_cast<float>(batch + 1);|' \
  "$work/src/model_plugin/linear_model.cc" > "$work/broken/linear_model.cc"
! cmp -s "$work/broken/fp16_floor.cc" "$work/src/precision_plugin/fp16_floor.cc" || fail "sed did not inject the scaler bug"
! cmp -s "$work/broken/linear_model.cc" "$work/src/model_plugin/linear_model.cc" || fail "sed did not inject the gradient bug"
# resmlp keeping its activations in fp32 whatever the precision says, and
# resmlp forgetting to recompute a block under checkpointing.
sed 's/const MNT_DType act = setup_.precision.activation_dtype;/const MNT_DType act = MNT_DTYPE_F32;/' \
  "$work/src/resmlp_model/resmlp.cc" > "$work/broken/resmlp_dtype.cc"
sed 's/recompute_.Restore(k, \[&\] { return BlockForward(p, k, B, \/\*to_next=\*\/false); })/recompute_.Restore(k, [] { return Status::Ok(); })/' \
  "$work/src/resmlp_model/resmlp.cc" > "$work/broken/resmlp_recompute.cc"
for bug in dtype recompute; do
  ! cmp -s "$work/broken/resmlp_$bug.cc" "$work/src/resmlp_model/resmlp.cc" || fail "sed did not inject the $bug bug"
done
for src in fp16_floor linear_model resmlp_dtype resmlp_recompute; do
  g++ -std=c++17 -O2 -Wall -Wextra -Werror -shared -fPIC $(pkg-config --cflags mantissa) "$work/broken/$src.cc" \
    -o "$work/broken/$src.so" $(pkg-config --variable=plugin_ldflags mantissa)
  if "$sdk/bin/plugin_conformance" "$work/broken/$src.so" > "$work/broken/$src.txt"; then
    cat "$work/broken/$src.txt"; fail "conformance passed a broken $src"
  fi
  grep '^\[FAIL\]' "$work/broken/$src.txt"
done
grep -q '^\[FAIL\] precision/scaler_recipe_replay' "$work/broken/fp16_floor.txt" || fail "backoff bug not named"
grep -q '^\[FAIL\] model/[a-z_]*/backward_vs_finite_differences' "$work/broken/linear_model.txt" || fail "gradient bug not named"
grep -q '^\[FAIL\] model/features/storage/bf16 .*activations take' "$work/broken/resmlp_dtype.txt" \
  || fail "the fp32 activations are not named"
grep -q '^\[FAIL\] model/features/checkpointing/f32 .*from those without checkpointing' \
  "$work/broken/resmlp_recompute.txt" || fail "the missing recompute is not named"
echo PASS
