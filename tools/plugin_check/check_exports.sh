#!/usr/bin/env bash
# The plugin must export MNT_GetPluginApi and nothing else (see tools/plugin_exports.lds).
set -euo pipefail
so="$1"
exported="$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDRBVW]$/ {print $3}' | sort -u)"
echo "exported dynamic symbols of $so:"; echo "$exported"
[[ "$exported" == "MNT_GetPluginApi" ]] || { echo "FAIL: expected only MNT_GetPluginApi"; exit 1; }
echo PASS
