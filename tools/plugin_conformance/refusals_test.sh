#!/usr/bin/env bash
# plugin_conformance refuses broken plugins in one line with exit status 1.
set -euo pipefail
tool="$1" crashes="$2" newer="$3"
check() {
  local file="$1" pattern="$2" err rc=0
  err="$("$tool" "$file" 2>&1 >/dev/null)" || rc=$?
  [[ $rc == 1 ]] || { echo "FAIL: $file: exit $rc" >&2; exit 1; }
  [[ "$(wc -l <<<"$err")" == 1 ]] || { echo "FAIL: not one line: $err" >&2; exit 1; }
  grep -q -- "$pattern" <<<"$err" || { echo "FAIL: '$err' lacks '$pattern'" >&2; exit 1; }
  echo "ok: $err"
}
check "$crashes" "plugin crashed in Plugin_Initialize (signal 11"
check "$newer" "newer than this trainer's"
"$tool" >/dev/null 2>&1 && { echo "FAIL: no-argument usage exited 0" >&2; exit 1; }
echo PASS
