#!/usr/bin/env bash
# The device check, from an unpacked device bundle on a GPU machine:
#   device_bundle/run.sh [RESULTS_DIR] [device_check.py options]
#   device_bundle/run.sh RESULTS_DIR --plan     # what would run, when; runs nothing
# One run of at most --budget seconds (525, for the device tool's timeout_s
# 540): parts in priority order (environment, GPU tests and conformance,
# train per precision, GPT-2 124M Mantissa vs PyTorch, the rest), each by its
# deadline; what the budget cuts reads CUT. A rerun: --rerun-failed=OLD.tsv
# --budget=S (see device_check.py and docs/performance.md). Every result row
# and output line lands in RESULTS_DIR (default: results/ beside this
# script) as it happens, so a cut run keeps what it did; the summary is
# printed last.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
results="$here/results"
if (( $# )) && [[ "$1" != --* ]]; then
  results="$1"
  shift
fi
# The check itself needs any Python 3.8+ (standard library only); the
# interpreter with torch, for PyTorch's side, is found by device_env.py.
python=""
for cand in "$(command -v python3 || true)" "$(command -v python || true)" \
    /usr/bin/python3 /usr/local/bin/python3 /opt/*/.venv/bin/python3 /opt/*/venv/bin/python3 \
    /opt/conda/bin/python3 /root/.venv/bin/python3; do
  [[ -n "$cand" && -x "$cand" ]] || continue
  if "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then
    python="$cand"
    break
  fi
done
if [[ -z "$python" ]]; then
  echo "run.sh: error: no Python 3.8 or newer found (PATH, /usr/bin, /usr/local/bin, /opt/*/.venv, /opt/conda); the device check is a Python script" >&2
  exit 1
fi
exec "$python" -u "$here/scripts/device_check.py" --results="$results" "$@"
