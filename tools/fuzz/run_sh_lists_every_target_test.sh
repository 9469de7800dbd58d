#!/usr/bin/env bash
# run.sh knows how to build every fuzz target BUILD declares, and no other.
set -euo pipefail
dir="$(dirname "$0")"
[[ -f "$dir/run.sh" ]] || dir="${TEST_SRCDIR}/mantissa/tools/fuzz"
declared="$(sed -n 's/^ *name = "\([a-z_]*_fuzz\)",$/\1/p' "$dir/BUILD" | sort)"
listed="$(bash "$dir/run.sh" list | sort)"
if [[ "$declared" != "$listed" ]]; then
  echo "BUILD declares:"; echo "$declared"; echo "run.sh lists:"; echo "$listed"
  exit 1
fi
echo "$(echo "$listed" | wc -l) targets"
