#!/usr/bin/env bash
# Every test tagged "gpu" anywhere in the workspace reaches the GPU: the
# device bundle's list (GPU_TESTS in tools/gpu/BUILD, given as a file of
# labels) must equal what
#   bazel query 'attr(tags, gpu, tests(//...))'
# finds. genquery cannot take //..., so this test runs that query itself:
# a second Bazel in batch mode on this workspace (found through this
# script's own source file), with its own output root under TEST_TMPDIR, so
# it never touches the outer build's server or caches.
set -uo pipefail
listed="$1"
fail() { echo "FAIL: $*"; exit 1; }
self="$(readlink -f "${BASH_SOURCE[0]}")"
ws="$(cd "$(dirname "$self")/../.." && pwd)"
[[ -f "$ws/WORKSPACE" && -x "$ws/tools/bazel" ]] || fail "cannot find the workspace from $self"
# Outside the workspace and its bazel-* trees (TEST_TMPDIR is under the
# execroot, which a second Bazel would find again through bazel-main/).
root="$(mktemp -d /tmp/mantissa_gpu_test_list.XXXXXX)"
trap 'chmod -R u+w "$root" 2>/dev/null; rm -rf "$root"' EXIT
# //... as the outer build sees it: a second Bazel would also walk the
# outer one's convenience symlinks (bazel-<name>, bazel-out, ...), so the
# pattern is spelled out from the workspace's real top-level folders.
patterns="//:all"
for d in "$ws"/*/; do
  d="$(basename "$d")"
  [[ -L "$ws/$d" || "$d" == bazel-* || ! -d "$ws/$d" ]] && continue
  # Only folders holding a package (a pattern matching nothing is an error).
  [[ -n "$(find "$ws/$d" \( -name BUILD -o -name BUILD.bazel \) -print -quit)" ]] || continue
  patterns="$patterns + //$d/..."
done
# The tag as a whole word of the rendered list ("[gpu, manual]"), so a tag
# such as "no_gpu" would not count.
query="attr(tags, \"[\\[ ]gpu[,\\]]\", tests($patterns))"
if ! found="$(cd "$ws" && env -u MANTISSA_BAZEL_WRAPPED -u BAZEL_REAL -u TEST_TMPDIR HOME="$root" \
    "$ws/tools/bazel" --batch --output_user_root="$root/out" query "$query" 2> "$root/log")"; then
  cat "$root/log"
  fail "bazel query failed"
fi
found="$(grep '^//' <<<"$found" | sort)"
want="$(sort "$listed")"
echo "bazel query $query:"
sed 's/^/  /' <<<"$found"
missing="$(comm -23 <(echo "$found") <(echo "$want"))"
extra="$(comm -13 <(echo "$found") <(echo "$want"))"
[[ -z "$missing" ]] || fail "tagged gpu but not in the device bundle (tools/gpu/BUILD GPU_TESTS): $missing"
[[ -z "$extra" ]] || fail "in the device bundle's list but not a gpu-tagged test: $extra"
(( $(wc -l <<<"$found") >= 10 )) || fail "the query found only $(wc -l <<<"$found") tests"
echo "PASS: the device bundle holds all $(wc -l <<<"$found") gpu-tagged tests"
