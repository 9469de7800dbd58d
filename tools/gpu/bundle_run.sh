#!/usr/bin/env bash
# The device check, from an unpacked device bundle on a GPU machine:
#   device_bundle/run.sh [RESULTS_DIR] [device_check.py options]
# e.g. --stage=1, --stage=2, --rerun-failed=PATH/results.tsv (see
# device_check.py and docs/performance.md for the device tool's calls).
# Stage 1 (tests, train, memcheck) and stage 2 (GPT-2 124M benchmark with
# PyTorch side by side) each take at most 4 minutes; every result row and
# every output line lands in RESULTS_DIR (default: results/ beside this
# script) as it happens, so a cut run keeps what it did; the summary is
# printed last.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
results="${1:-$here/results}"
(( $# )) && shift
command -v python3 >/dev/null || { echo "run.sh: python3 is needed (the device check is a Python script)" >&2; exit 1; }
exec python3 -u "$here/scripts/device_check.py" --results="$results" "$@"
