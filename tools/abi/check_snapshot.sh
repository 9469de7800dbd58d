#!/usr/bin/env bash
# Compares the ABI the headers describe now with the checked-in snapshot.
#   check_snapshot.sh SNAPSHOT.abixml SNAPSHOT_VERSION CURRENT.abixml mnt_common.h classify.py \
#                     HEADER...
# SNAPSHOT_VERSION's first line is the ABI version the snapshot describes;
# each further line "<name> <version>" the version of an extension that has
# a header of its own (plugins/abi/mnt_<name>.h defining
# MNT_<NAME>_EXTENSION_VERSION; ext_versions below finds them among HEADER...).
# Additions confined to such a header go with that extension's version
# instead of an MNT_ABI_MINOR bump (docs/abi.md, "Changing the ABI").
set -uo pipefail
snapshot="$1" version_file="$2" current="$3" header="$4" classify="$5"
shift 5

major="$(sed -n 's/^#define MNT_ABI_MAJOR \([0-9]*\).*/\1/p' "$header")"
minor="$(sed -n 's/^#define MNT_ABI_HEADER_MINOR \([0-9]*\).*/\1/p' "$header")"
read -r snap_version < "$version_file"
snap_major="${snap_version%%.*}"

# "<name> <version>" for each header of its own extension among the headers.
ext_versions() {
  local h base name macro v
  for h in "$@"; do
    base="$(basename "$h" .h)"
    name="${base#mnt_}"
    macro="MNT_${name^^}_EXTENSION_VERSION"
    v="$(sed -n "s/^#define $macro \([0-9]*\).*/\1/p" "$h")"
    if [[ -n "$v" ]]; then echo "$name $v"; fi
  done
}
declare -A ext_now=() ext_snap=()
while read -r name v; do [[ -n "$name" ]] && ext_now[$name]="$v"; done < <(ext_versions "$@")
while read -r name v; do [[ -n "$name" ]] && ext_snap[$name]="$v"; done < <(tail -n +2 "$version_file")
describe_ext() {  # describe_ext now|snap
  local -n versions="ext_$1"
  local name out=""
  for name in $(printf '%s\n' "${!versions[@]}" | sort); do
    out+=", $name extension ${versions[$name]}"
  done
  echo "$out"
}
echo "headers: ABI $major.$minor$(describe_ext now); snapshot: ABI $snap_version$(describe_ext snap)"

echo "--- abidiff snapshot current"
abidiff --no-show-locs "$snapshot" "$current"
abidiff_rc=$?
echo "--- abidiff exit status $abidiff_rc (0 = no change)"
(( abidiff_rc & 3 )) && { echo "FAIL: abidiff could not compare the files" >&2; exit 1; }

findings="$(python3 "$classify" "$snapshot" "$current")"
class=$?
[[ -n "$findings" ]] && echo "$findings"
fix="then run tools/abi/update_snapshot.sh and commit the new snapshot with the bump"
case "$class" in
  2)
    if [[ "$major" == "$snap_major" ]]; then
      echo "FAIL: incompatible ABI change (above) without an MNT_ABI_MAJOR bump: keep the change append-only or bump MNT_ABI_MAJOR, $fix" >&2
      exit 1
    fi ;;
  1)
    if [[ "$major.$minor" == "$snap_version" ]]; then
      # Without a minor bump, every addition must be in the header of an
      # extension whose own version grew.
      uncovered=() grown=()
      while read -r file; do
        name="${file%.h}"
        name="${name#mnt_}"
        if [[ -n "${ext_now[$name]:-}" ]] && (( ext_now[$name] > ${ext_snap[$name]:-0} )); then
          grown+=("$name ${ext_snap[$name]:-none} -> ${ext_now[$name]}")
        else
          uncovered+=("$file")
        fi
      done < <(sed -n 's/^compatible: .* \[\([^]]*\)\]$/\1/p' <<<"$findings" | sort -u)
      if (( ${#uncovered[@]} > 0 )); then
        echo "FAIL: compatible ABI change (additions above, in ${uncovered[*]}) without an MNT_ABI_MINOR bump: bump MNT_ABI_MINOR to $((minor + 1)), add a docs/abi.md changelog entry (additions confined to an extension's own header may instead bump that extension's version), $fix" >&2
        exit 1
      fi
      echo "compatible additions confined to extensions whose own version grew (${grown[*]}): no MNT_ABI_MINOR bump needed"
    fi ;;
  0)
    if (( abidiff_rc != 0 )) && [[ "$major.$minor" == "$snap_version" ]]; then
      echo "FAIL: abidiff reports a change the append-only check cannot classify; treat it as incompatible or regenerate the snapshot after review" >&2
      exit 1
    fi ;;
  *) echo "FAIL: classify_abi_change.py failed ($class)" >&2; exit 1 ;;
esac
if [[ "$major.$minor" != "$snap_version" ]]; then
  echo "FAIL: the headers say ABI $major.$minor but the snapshot describes $snap_version; review the change above, $fix" >&2
  exit 1
fi
if [[ "$(describe_ext now)" != "$(describe_ext snap)" ]]; then
  echo "FAIL: the headers say ABI $major.$minor$(describe_ext now) but the snapshot describes ABI $snap_version$(describe_ext snap); review the change above, $fix" >&2
  exit 1
fi
echo "PASS: ABI $major.$minor$(describe_ext now) matches its snapshot"
