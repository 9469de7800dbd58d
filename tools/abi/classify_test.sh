#!/usr/bin/env bash
# classify_abi_change.py on edited copies of the current dump: no change,
# an appended enumerator (compatible, naming its header), a moved field, a
# renumbered enumerator and a grown MNT_Tensor (incompatible).
set -uo pipefail
classify="$1" current="$2"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {
  local name="$1" want="$2" file="$3" rc
  python3 "$classify" "$current" "$file" > "$tmp/$name.out"; rc=$?
  cat "$tmp/$name.out"
  [[ $rc == "$want" ]] || fail "$name: classified $rc, expected $want"
  echo "ok: $name -> $rc"
}
edit() {  # edit NAME SED_SCRIPT: a copy of the dump with one change
  sed "$2" "$current" > "$tmp/$1.abixml"
  cmp -s "$tmp/$1.abixml" "$current" && fail "$1: the edit changed nothing"
  echo "$tmp/$1.abixml"
}
expect same 0 "$current"
expect enum_added 1 "$(edit enum_added "s|<enumerator name='MNT_DTYPE_F64' value='6'/>|&<enumerator name='MNT_DTYPE_F8' value='7'/>|")"
# check_snapshot.sh reads the header from the finding (an addition confined
# to an extension's own header may go with the extension's version).
grep -qx "compatible: MNT_DTYPE_F8 = 7 added \[mnt_common.h\]" "$tmp/enum_added.out" ||
  fail "enum_added: the finding does not name mnt_common.h"
expect enum_renumbered 2 "$(edit enum_renumbered "s|<enumerator name='MNT_DTYPE_F16' value='2'/>|<enumerator name='MNT_DTYPE_F16' value='9'/>|")"
# MNT_Tensor.dims is at bit 192; pretend it moved.
expect field_moved 2 "$(edit field_moved "/class-decl name='MNT_Tensor'/,/<\/class-decl>/ s|layout-offset-in-bits='192'|layout-offset-in-bits='256'|")"
expect tensor_grew 2 "$(edit tensor_grew "s|<class-decl name='MNT_Tensor' size-in-bits='576'|<class-decl name='MNT_Tensor' size-in-bits='640'|")"
grep -q "MNT_Tensor changed size" "$tmp/tensor_grew.out" || fail "tensor_grew: reason not named"
echo PASS
