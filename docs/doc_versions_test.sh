#!/usr/bin/env bash
# The ABI version the docs state is the headers' (plugins/abi/mnt_common.h):
# docs/abi.md's title and the version docs/plugins.md shows pkg-config
# printing. A bump that forgets the docs fails here.
set -euo pipefail
root="${TEST_SRCDIR:-.}/mantissa"
header="$root/plugins/abi/mnt_common.h"
major="$(sed -n 's/^#define MNT_ABI_MAJOR \([0-9]*\).*/\1/p' "$header")"
minor="$(sed -n 's/^#define MNT_ABI_HEADER_MINOR \([0-9]*\).*/\1/p' "$header")"
version="$major.$minor"
fail=0
title="$(head -1 "$root/docs/abi.md")"
[[ "$title" == *"(v$version)"* ]] || { echo "FAIL: docs/abi.md says '$title', the headers $version"; fail=1; }
grep -q "^\* \*\*$version\*\* " "$root/docs/abi.md" || { echo "FAIL: docs/abi.md has no changelog entry for $version"; fail=1; }
shown="$(sed -n 's/.*pkg-config --modversion mantissa *# the ABI version, e.g. \([0-9.]*\).*/\1/p' "$root/docs/plugins.md")"
[[ "$shown" == "$version" ]] || { echo "FAIL: docs/plugins.md shows pkg-config printing '$shown', the headers say $version"; fail=1; }
(( fail == 0 )) && echo "PASS: the docs state ABI $version, as the headers do"
exit "$fail"
