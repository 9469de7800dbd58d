#!/usr/bin/env bash
# Compares the ABI the headers describe now with the checked-in snapshot.
#   check_snapshot.sh SNAPSHOT.abixml SNAPSHOT_VERSION CURRENT.abixml mnt_common.h classify.py
set -uo pipefail
snapshot="$1" version_file="$2" current="$3" header="$4" classify="$5"

major="$(sed -n 's/^#define MNT_ABI_MAJOR \([0-9]*\).*/\1/p' "$header")"
minor="$(sed -n 's/^#define MNT_ABI_MINOR \([0-9]*\).*/\1/p' "$header")"
read -r snap_version < "$version_file"
snap_major="${snap_version%%.*}"
echo "headers: ABI $major.$minor; snapshot: ABI $snap_version"

echo "--- abidiff snapshot current"
abidiff --no-show-locs "$snapshot" "$current"
abidiff_rc=$?
echo "--- abidiff exit status $abidiff_rc (0 = no change)"
(( abidiff_rc & 3 )) && { echo "FAIL: abidiff could not compare the files" >&2; exit 1; }

python3 "$classify" "$snapshot" "$current"
class=$?
fix="then run tools/abi/update_snapshot.sh and commit the new snapshot with the bump"
case "$class" in
  2)
    if [[ "$major" == "$snap_major" ]]; then
      echo "FAIL: incompatible ABI change (above) without an MNT_ABI_MAJOR bump: keep the change append-only or bump MNT_ABI_MAJOR, $fix" >&2
      exit 1
    fi ;;
  1)
    if [[ "$major.$minor" == "$snap_version" ]]; then
      echo "FAIL: compatible ABI change (additions above) without an MNT_ABI_MINOR bump: bump MNT_ABI_MINOR to $((minor + 1)), add a docs/abi.md changelog entry, $fix" >&2
      exit 1
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
echo "PASS: ABI $major.$minor matches its snapshot"
