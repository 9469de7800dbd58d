#!/usr/bin/env bash
# mantissa_plugin_conformance_test (plugin.bzl): the SDK's plugin_info and
# plugin_conformance must both accept the plugin.
#   conformance_test.sh PLUGIN_INFO PLUGIN_CONFORMANCE PLUGIN.so
set -euo pipefail
info_tool="$1"
conformance_tool="$2"
plugin="$3"

info="$("$info_tool" "$plugin")" || { echo "FAIL: plugin_info refuses $plugin" >&2; exit 1; }
echo "$info"
if ! grep -q '^exports: *MNT_GetPluginApi$' <<<"$info"; then
  echo "FAIL: $plugin must export only MNT_GetPluginApi" >&2
  exit 1
fi
report="$("$conformance_tool" "$plugin")" || {
  echo "$report"; echo "FAIL: $plugin fails plugin_conformance" >&2; exit 1; }
echo "$report"
# A suite that ran nothing proves nothing.
if ! grep -q '^conformance: [1-9][0-9]* passed, 0 failed' <<<"$report"; then
  echo "FAIL: plugin_conformance ran no checks on $plugin" >&2
  exit 1
fi
echo PASS
