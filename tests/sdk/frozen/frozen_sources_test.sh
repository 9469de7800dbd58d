#!/usr/bin/env bash
# The ABI promise for plugin sources (docs/abi.md section 1, docs/plugins.md
# "Rebuilding a source written against an older minor"): a plugin source
# written against ABI 1.N, rebuilt against today's SDK bundle with the
# documented flags and -DMNT_ABI_SOURCE_MINOR=N, behaves exactly as the
# binary built back then against 1.N's own headers.
#
#   frozen_sources_test.sh BUNDLE COMPARE_RUNS FP16_FLOOR_STATE N ERA_INCLUDE ITEM...
#
# COMPARE_RUNS and FP16_FLOOR_STATE are compare_runs.py and
# ../fp16_floor_state.py.
# ITEM is a source file (.c: a C plugin, .cc: C++) kept as written in its
# era, or alias:INCLUDE=TARGET, an #include of the era's headers by another
# path (tests/abi/v1_0_backend.c includes "tests/abi/v1_0/mantissa.h"),
# which against today's SDK names TARGET. For each source it builds
#   the frozen binary   against ERA_INCLUDE (the era's headers and SDK),
#   the rebuilt binary  against the bundle, as plugin authors build:
#     g++ -std=c++17 -O2 -Wall -Wextra -Werror -DMNT_ABI_SOURCE_MINOR=N
#       -shared -fPIC $(pkg-config --cflags mantissa) ... (gcc -std=c11: C)
# and requires of the two: the same plugin_info, the same plugin_conformance
# results check by check (same seed, with and without the plugin's
# options), and the same training runs bit for bit with the plugin's options
# (JSONL metrics and final checkpoints). Without the define the same source
# must fail -Werror where its table grew (the error naming the member it
# lacks), and a run with its own options must be refused with the hint that
# names -DMNT_ABI_SOURCE_MINOR.
set -euo pipefail
bundle="$1" compare_runs="$2" fp16_floor_state="$3" minor="$4" era_include="$5"
shift 5

fail() { echo "FAIL: $*" >&2; exit 1; }
work="${TEST_TMPDIR:-$(mktemp -d)}/frozen_v1_$minor"
rm -rf "$work" && mkdir -p "$work"/{build,alias}
start=$SECONDS

tar -xzf "$bundle" -C "$work"
sdk="$work/mantissa_sdk"
export PKG_CONFIG_PATH="$sdk/lib/pkgconfig"
host_abi="$(pkg-config --modversion mantissa)"
cflags="$(pkg-config --cflags mantissa)"
ldflags="$(pkg-config --variable=plugin_ldflags mantissa)"

sources=()
for item in "$@"; do
  case "$item" in
    alias:*)
      spec="${item#alias:}"
      mkdir -p "$work/alias/$(dirname "${spec%%=*}")"
      printf '#include "%s"\n' "${spec#*=}" > "$work/alias/${spec%%=*}" ;;
    *) sources+=("$item") ;;
  esac
done

# The first member a table gained after 1.N (the ABI's history): a source
# that fills its table positionally lacks it when built without the define.
first_member_after() {
  case "$1" in
    precision)
      if (( minor < 5 )); then echo "MNT_Precision_Api LossScaler_GetRecipe"
      elif (( minor < 10 )); then echo "MNT_Precision_Api Precision_GetScalingRecipe"; fi ;;
    backend)
      if (( minor < 1 )); then echo "MNT_Backend_Api Event_Create"
      elif (( minor < 7 )); then echo "MNT_Backend_Api Backend_StepBegin"; fi ;;
  esac
}

# compile SRC OUT FLAVOUR: frozen | rebuilt | plain (no define) | lax (no
# define, no -Werror); the compiler's output goes to OUT.log.
compile() {
  local src="$1" out="$2" flavour="$3" cc std werror=-Werror inc
  case "$src" in
    *.c) cc=gcc std=-std=c11 ;;
    *) cc=g++ std=-std=c++17 ;;
  esac
  case "$flavour" in
    frozen) inc=(-I"$era_include") ;;
    rebuilt) inc=(-DMNT_ABI_SOURCE_MINOR="$minor" $cflags -I"$work/alias") ;;
    plain) inc=($cflags -I"$work/alias") ;;
    lax) inc=($cflags -I"$work/alias") werror="" ;;
  esac
  # shellcheck disable=SC2086
  $cc $std -O2 -Wall -Wextra $werror "${inc[@]}" -shared -fPIC "$src" -o "$out" \
    $ldflags $([[ "$src" == *.c ]] && echo -lm) > "$out.log" 2>&1
}

# Every build at once (they are independent), then the verdicts; "lax"
# only where step 4 needs it.
declare -A pid_of status_of
for src in "${sources[@]}"; do
  stem="$(basename "${src%.*}")"
  for flavour in frozen rebuilt plain; do
    compile "$src" "$work/build/$stem.$flavour.so" "$flavour" &
    pid_of[$stem.$flavour]=$!
  done
done
builds=0
for key in "${!pid_of[@]}"; do
  rc=0; wait "${pid_of[$key]}" || rc=$?; status_of[$key]=$rc; builds=$((builds + 1))
done
echo "built ${#sources[@]} source(s), $builds builds, in $((SECONDS - start)) s"

# name_of SO -> "<kind> <name>" from plugin_info.
name_of() {
  "$sdk/bin/plugin_info" "$1" | awk '/^name:/ {n=$2} /^kind:/ {k=$2} END {print k, n}'
}

for src in "${sources[@]}"; do
  stem="$(basename "${src%.*}")"
  b="$work/build/$stem"
  for flavour in frozen rebuilt; do
    (( status_of[$stem.$flavour] == 0 )) \
      || { cat "$b.$flavour.so.log"; fail "$src: the $flavour build failed"; }
  done
  plain_rc="${status_of[$stem.plain]}"
  read -r kind name < <(name_of "$b.frozen.so")
  [[ -n "$kind" && -n "$name" ]] || fail "$src: plugin_info names no kind and name"
  label="1.$minor $kind $name"
  for flavour in frozen rebuilt; do
    mkdir -p "$work/$flavour"
    cp "$b.$flavour.so" "$work/$flavour/mnt_${kind}_${name}.so"
  done

  # 1. What it is: plugin_info says the same, ABI 1.N included.
  for flavour in frozen rebuilt; do
    "$sdk/bin/plugin_info" "$work/$flavour/mnt_${kind}_${name}.so" | grep -v '^file:' \
      > "$work/$stem.info.$flavour" || fail "$label: plugin_info refused the $flavour build"
  done
  grep -q "^abi: *1\.$minor (this host: $host_abi)" "$work/$stem.info.frozen" \
    || { cat "$work/$stem.info.frozen"; fail "$label: the frozen binary is not ABI 1.$minor"; }
  diff "$work/$stem.info.frozen" "$work/$stem.info.rebuilt" \
    || fail "$label: plugin_info differs (frozen <, rebuilt >)"
  echo "ok: $label: plugin_info identical ($(grep '^capabilities:' "$work/$stem.info.frozen" | tr -s ' '))"

  # 2. Conformance, check by check, on the same random seed; with the
  # plugin's own options as well where its era had them.
  seed="$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
  option_sets=("")
  case "$kind" in
    precision) (( minor < 5 )) || option_sets+=("min_scale=2,max_scale=1e30") ;;
    model) option_sets+=("init_scale=0.05,weight_decay=0") ;;
  esac
  for options in "${option_sets[@]}"; do
    for flavour in frozen rebuilt; do
      rc=0
      "$sdk/bin/plugin_conformance" "$work/$flavour/mnt_${kind}_${name}.so" --seed="$seed" \
        ${options:+--options="$options"} > "$work/$stem.conf.$flavour" 2>&1 || rc=$?
      echo "$rc" > "$work/$stem.conf_rc.$flavour"
      grep '^\[' "$work/$stem.conf.$flavour" > "$work/$stem.checks.$flavour" || true
    done
    [[ -s "$work/$stem.checks.frozen" ]] || { cat "$work/$stem.conf.frozen"; fail "$label: no checks ran"; }
    diff "$work/$stem.checks.frozen" "$work/$stem.checks.rebuilt" \
      || fail "$label: conformance${options:+ --options=$options} differs (frozen <, rebuilt >; seed $seed)"
    cmp -s "$work/$stem.conf_rc.frozen" "$work/$stem.conf_rc.rebuilt" \
      || fail "$label: conformance exit status differs"
    failed="$(grep '^\[FAIL\]' "$work/$stem.checks.frozen" | sed 's/^\[FAIL\] \([^:]*\).*/\1/' \
      | paste -sd',' -)" || true
    echo "ok: $label: conformance${options:+ --options=$options} (seed $seed): the same" \
      "$(wc -l < "$work/$stem.checks.frozen") checks," \
      "$(grep -c '^\[PASS\]' "$work/$stem.checks.frozen") passed," \
      "$(grep -c '^\[FAIL\]' "$work/$stem.checks.frozen") failed${failed:+ ($failed)}," \
      "$(grep -c '^\[SKIP\]' "$work/$stem.checks.frozen") skipped"
  done

  # 3. Training with its options: the same run, bit for bit.
  # train_pair TAG SKIPS TRAIN_FLAG...: the frozen and the rebuilt plugin,
  # each in its own plugin folder, the rest of the run the bundle's. SKIPS
  # "skips": the run must skip some steps (the scaler backs off).
  train_pair() {
    local tag="$1" skips="$2"; shift 2
    for flavour in frozen rebuilt; do
      local out="$work/runs/$stem.$tag.$flavour"
      mkdir -p "$(dirname "$out")"
      "$sdk/bin/train" --plugin_path="$work/$flavour" --dataset=digits --steps=40 --seed=7 \
        --progress=none --cache_dir="$work/cache" --checkpoint_dir="$out" \
        --metrics_jsonl="$out.jsonl" "$@" > "$out.log" 2>&1 \
        || { cat "$out.log"; fail "$label: the $flavour $tag run failed"; }
    done
    python3 "$compare_runs" "$label, $tag run ($*)" "$kind" "1.$minor" \
      "$work/runs/$stem.$tag.frozen.jsonl" "$work/runs/$stem.$tag.rebuilt.jsonl" $skips || exit 1
    cmp "$work/runs/$stem.$tag.frozen/checkpoint-40" "$work/runs/$stem.$tag.rebuilt/checkpoint-40" \
      || fail "$label: the $tag runs' final checkpoints differ"
  }
  case "$kind" in
    precision)
      if (( minor < 5 )); then
        # Its era's options are the loss scaler's (--init_scale ...): from its
        # ceiling (2^24) the scale backs off and grows again on the host, in
        # its LossScaler_Update.
        train_pair host skips --model=mlp --precision="$name" --init_scale=16777216 --growth_interval=2
      else
        # Its own options (1.5): the declared recipe on the device, with a
        # floor it hits; and recipe=none on the host, where its own state
        # (floor_hits, in every checkpoint) counts.
        train_pair device skips --model=mlp --precision="$name" --init_scale=16777216 \
          --growth_interval=2 --precision_options=min_scale=262144,max_scale=1e31
        train_pair host skips --model=mlp --precision="$name" --init_scale=393216 --growth_interval=2 \
          --precision_options=min_scale=393216,max_scale=1e31,recipe=none
        hits="$(python3 "$fp16_floor_state" "$work/runs/$stem.host.frozen/checkpoint-40")"
        (( hits > 0 )) || fail "$label: floor_hits $hits after the host run (its own state never moved)"
        echo "ok: $label: its own state (floor_hits $hits) is the same in both final checkpoints"
      fi ;;
    model)
      train_pair fp16 "" --model="$name" --precision=fp16 --model_options=init_scale=0.05,weight_decay=0 ;;
    backend)
      echo "note: $label: no training run (it runs FILL, ADD and REDUCE only; no model trains on it)" ;;
  esac

  # 4. Without the define the source claims today's minor: where its table
  # grew since 1.N, -Werror stops at the member it does not list ...
  if member="$(first_member_after "$kind")" && [[ -n "$member" ]]; then
    read -r type field <<<"$member"
    (( plain_rc != 0 )) || fail "$label: built without -DMNT_ABI_SOURCE_MINOR and still -Werror clean"
    grep -Eq "error: missing initializer for (member .$type::$field.|field .$field. of .$type.)" \
      "$b.plain.so.log" || { cat "$b.plain.so.log"; fail "$label: the -Werror failure does not name $type::$field"; }
    echo "ok: $label: without the define -Werror stops: $(grep -m1 -o 'missing initializer for .*\]' "$b.plain.so.log")"
  else
    (( plain_rc == 0 )) || { cat "$b.plain.so.log"; fail "$label: built without the define it is not -Werror clean"; }
  fi
  # ... and, built anyway, a run with its own options is refused, in one
  # line that says how to keep what its old binary had.
  if [[ "$kind" == precision ]] && (( minor >= 5 )); then
    out="$work/runs/$stem.lax"
    compile "$src" "$b.lax.so" lax \
      || { cat "$b.lax.so.log"; fail "$label: built without the define and -Werror, it does not build"; }
    mkdir -p "$work/lax" && cp "$b.lax.so" "$work/lax/mnt_${kind}_${name}.so"
    "$sdk/bin/plugin_info" "$work/lax/mnt_${kind}_${name}.so" | grep -q "^abi: *$host_abi " \
      || fail "$label: built without the define it does not claim ABI $host_abi"
    if "$sdk/bin/train" --plugin_path="$work/lax" --dataset=digits --steps=2 --progress=none \
        --cache_dir="$work/cache" --checkpoint_dir="$out" --model=mlp --precision="$name" \
        --precision_options=min_scale=2 > "$out.log" 2>&1; then
      fail "$label: built without the define, its options were accepted"
    fi
    [[ "$(wc -l < "$out.log")" -eq 1 ]] \
      && grep -q "^mantissa: error: .*precision options 'min_scale=2' refused: the plugin (ABI $host_abi) takes none .*-DMNT_ABI_SOURCE_MINOR=" "$out.log" \
      || { cat "$out.log"; fail "$label: the refusal without the define is not the one line with the hint"; }
    echo "ok: $label: without the define its options are refused: $(cat "$out.log")"
  fi
done
echo "PASS ($((SECONDS - start)) s)"
