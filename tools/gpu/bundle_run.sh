#!/usr/bin/env bash
# The device check, from an unpacked device bundle on a GPU machine:
#   device_bundle/run.sh [RESULTS_DIR] [device_check.py options, e.g. --parts=bench,torch]
# Runs every GPU test, train --device=cuda per model and precision, the GPT-2
# 124M benchmark and PyTorch's on the same shapes and data, each part under
# its own time limit, all within 470 s; writes at most 8 files to RESULTS_DIR
# (default: results/ beside this script) and prints the summary last.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
results="${1:-$here/results}"
(( $# )) && shift
command -v python3 >/dev/null || { echo "run.sh: python3 is needed (the device check is a Python script)" >&2; exit 1; }
exec python3 "$here/scripts/device_check.py" --results="$results" "$@"
