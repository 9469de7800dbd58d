#!/usr/bin/env bash
# Builds a libFuzzer target with Debian's clang (ASan + UBSan, every finding
# fatal) and runs it on a copy of its seed corpus.
#
#   tools/fuzz/run.sh TARGET [SECONDS] [libFuzzer flags...]   one target
#   tools/fuzz/run.sh all [SECONDS]                            each in turn
#   tools/fuzz/run.sh list                                     the targets
#
# SECONDS defaults to 300. Needs clang (apt-get install clang; Debian 12's
# clang-14 ships libFuzzer) and the packages tools/bazel installs. Work goes
# to ${MANTISSA_FUZZ_OUT:-~/.cache/mantissa/fuzz}/TARGET/: the binary, the
# growing corpus and any crash-* input. A crash input belongs in
# tools/fuzz/crashes/<target>/ once fixed: the replay tests run it in
# `tools/bazel test //...` from then on (docs/reliability.md).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
out_root="${MANTISSA_FUZZ_OUT:-${HOME:-/tmp}/.cache/mantissa/fuzz}"
targets=(checkpoint_fuzz token_shard_fuzz idx_fuzz text_config_fuzz option_string_fuzz
         plugin_elf_fuzz)

# The sources each target links besides its own file (what its Bazel
# library pulls in, minus what is only needed elsewhere).
sources() {
  case "$1" in
    checkpoint_fuzz) echo trainer/checkpoint/checkpoint.cc trainer/checkpoint/atomic_file.cc \
                          GEN/trainer/checkpoint/checkpoint.pb.cc ;;
    token_shard_fuzz) echo trainer/data/token_shards.cc trainer/checkpoint/atomic_file.cc ;;
    idx_fuzz) echo trainer/data/idx.cc trainer/data/dataset.cc trainer/data/sampler.cc \
                   trainer/checkpoint/atomic_file.cc ;;
    text_config_fuzz) echo trainer/config/config.cc trainer/config/config_fields.cc \
                           trainer/checkpoint/atomic_file.cc GEN/trainer/config/train_config.pb.cc ;;
    option_string_fuzz) echo models/mlp/mlp_options.cc models/cnn/cnn_options.cc \
                             models/gpt2/gpt2_options.cc ;;
    plugin_elf_fuzz) echo trainer/loader/elf_check.cc tools/plugin_info/elf_symbols.cc ;;
    *) return 1 ;;
  esac
}

build() {
  local target="$1" out="$2"
  local clang
  clang="$(command -v clang++ || command -v clang++-14 || true)"
  if [[ -z "$clang" ]]; then
    echo "tools/fuzz/run.sh: clang++ not found (apt-get install clang)" >&2
    exit 1
  fi
  local gen="$out_root/gen"
  mkdir -p "$gen"
  # Generated protobuf code, as Bazel's cc_proto makes it.
  (cd "$root" && protoc --cpp_out="$gen" trainer/checkpoint/checkpoint.proto \
      trainer/config/train_config.proto)
  local srcs=()
  for s in $(sources "$target"); do srcs+=("${s/GEN/$gen}"); done
  # shellcheck disable=SC2046
  (cd "$root" && "$clang" -std=c++17 -O1 -g -fno-omit-frame-pointer \
      -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
      -I. -I"$gen" "tools/fuzz/$target.cc" "${srcs[@]}" -o "$out/$target" \
      $(pkg-config --cflags --libs absl_status absl_statusor absl_strings absl_str_format \
            absl_flags absl_synchronization protobuf zlib) -lpthread)
}

run_one() {
  local target="$1" seconds="$2"
  shift 2
  sources "$target" >/dev/null || { echo "unknown target $target; try: $0 list" >&2; exit 2; }
  local out="$out_root/$target"
  mkdir -p "$out/corpus" "$out/crashes"
  build "$target" "$out"
  # The seeds and every crash input found so far start the run; new inputs
  # go to the working corpus outside the repository.
  local dirs=("$out/corpus" "$root/tools/fuzz/corpus/$target")
  [[ -d "$root/tools/fuzz/crashes/$target" ]] && dirs+=("$root/tools/fuzz/crashes/$target")
  echo "== $target: ${seconds}s" >&2
  "$out/$target" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
      -rss_limit_mb=2048 -artifact_prefix="$out/crashes/" "$@" "${dirs[@]}"
}

case "${1:-}" in
  list) printf '%s\n' "${targets[@]}" ;;
  all)
    for t in "${targets[@]}"; do run_one "$t" "${2:-300}"; done ;;
  "" | -h | --help) sed -n '2,15p' "$0" ;;
  *) target="$1"; seconds="${2:-300}"; shift $(( $# >= 2 ? 2 : 1 )); run_one "$target" "$seconds" "$@" ;;
esac
