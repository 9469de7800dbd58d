#!/usr/bin/env bash
set -euo pipefail
"$1" --benchmark_min_time=0.01
