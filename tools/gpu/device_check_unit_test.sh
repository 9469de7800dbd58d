#!/usr/bin/env bash
# Runs device_check_unit_test.py (standard library only) with the system python3.
set -euo pipefail
dir="$(dirname "$0")"
[[ -f "$dir/device_check_unit_test.py" ]] || dir="${TEST_SRCDIR:-.}/mantissa/tools/gpu"
exec python3 "$dir/device_check_unit_test.py" -v
