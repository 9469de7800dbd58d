#!/usr/bin/env bash
# Bazel's --workspace_status_command (.bazelrc): the commit a build comes
# from, for `train --version`. STABLE_ keys rebuild what reads them (only
# //trainer/cli:build_info) when they change; nothing else is stamped.
# Outside a git checkout the commit is "unknown".
commit="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [[ "$commit" != unknown ]] && ! git diff --quiet HEAD -- 2>/dev/null; then
  commit="$commit+local-changes"
fi
echo "STABLE_MANTISSA_COMMIT $commit"
