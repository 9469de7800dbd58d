#!/usr/bin/env bash
# Regenerates tools/abi/mantissa_abi.abixml and SNAPSHOT_VERSION from the
# current headers, after a legitimate ABI bump, or a bump of an extension's
# own version for additions confined to its header (docs/abi.md, "Changing
# the ABI"). Shows what changed against the old snapshot first.
# SNAPSHOT_VERSION: "MAJOR.MINOR", then "<name> <version>" for each header
# plugins/abi/mnt_<name>.h that defines MNT_<NAME>_EXTENSION_VERSION (the
# rule check_snapshot.sh applies).
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/bazel build //tools/abi:current_abixml
new="$(tools/bazel info bazel-bin 2>/dev/null)/tools/abi/current_mantissa_abi.abixml"
major="$(sed -n 's/^#define MNT_ABI_MAJOR \([0-9]*\).*/\1/p' plugins/abi/mnt_common.h)"
minor="$(sed -n 's/^#define MNT_ABI_HEADER_MINOR \([0-9]*\).*/\1/p' plugins/abi/mnt_common.h)"
if [[ -f tools/abi/mantissa_abi.abixml ]]; then
  echo "changes since ABI $(tr '\n' ' ' < tools/abi/SNAPSHOT_VERSION):"
  python3 tools/abi/classify_abi_change.py tools/abi/mantissa_abi.abixml "$new" || true
fi
cp "$new" tools/abi/mantissa_abi.abixml
chmod u+w tools/abi/mantissa_abi.abixml
{
  echo "$major.$minor"
  for h in plugins/abi/mnt_*.h; do
    name="$(basename "$h" .h)"
    name="${name#mnt_}"
    v="$(sed -n "s/^#define MNT_${name^^}_EXTENSION_VERSION \([0-9]*\).*/\1/p" "$h")"
    if [[ -n "$v" ]]; then echo "$name $v"; fi
  done
} > tools/abi/SNAPSHOT_VERSION
echo "snapshot updated to $(tr '\n' ' ' < tools/abi/SNAPSHOT_VERSION): commit tools/abi/mantissa_abi.abixml and tools/abi/SNAPSHOT_VERSION"
