#!/usr/bin/env bash
# Builds the GPU device bundle and unpacks it into device_bundle/ (git-ignored).
#
#   tools/gpu/run_gpu_checks.sh           # on the build machine
#   device_bundle/run.sh [RESULTS_DIR]    # on the GPU machine: the device check
#   device_bundle/run.sh RESULTS_DIR --plan   # anywhere: what it runs, when
#
# The bundle (//tools/gpu:device_bundle, packed by tools/gpu/pack_bundle.sh)
# holds the GPU tests, train, the benchmarks, every plugin and every shared
# library they need except glibc's own, libstdc++/libgcc_s, the driver and
# CUDA's large libraries (cuBLAS/cuBLASLt/cuDNN/NVRTC), which device_check.py
# finds on the GPU machine. It is at most 48 MiB, so it travels with the
# repository to the device machine (64 MiB in all): carry "device_bundle".
# CI proves that it starts in a root with nothing else
# (//tools/gpu:minimal_root_test) and that the device check runs end to end
# without a GPU (//tools/gpu:device_check_test).
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/bazel build //tools/gpu:device_bundle
tar_file="$(tools/bazel info bazel-bin 2>/dev/null)/tools/gpu/device_bundle.tar"
rm -rf device_bundle
mkdir device_bundle
tar -xf "$tar_file" -C device_bundle
bundle_bytes="$(du -sb device_bundle | cut -f1)"
repo_bytes="$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)"
echo "run_gpu_checks: device_bundle/ holds $bundle_bytes bytes (limit $((48 * 1024 * 1024)));" \
     "with the repository $((bundle_bytes + repo_bytes)) bytes travel (device tool limit $((64 * 1024 * 1024)))"
echo "run_gpu_checks: on the GPU machine: device_bundle/run.sh RESULTS_DIR (--plan: what runs when, without running it)"
echo "  device tool, the call:    command 'device_bundle/run.sh \"\$OUT\"', carry [\"device_bundle\"], timeout_s 540"
echo "  a rerun on the warm machine (at once, within its 30 s idle): copy the returned results.tsv to"
echo "                            device_bundle/last_results.tsv, then command"
echo "                            'device_bundle/run.sh \"\$OUT\" --rerun-failed=device_bundle/last_results.tsv --budget=150',"
echo "                            same carry, timeout_s 165"
echo "  (docs/performance.md: the one-call plan minute by minute)"
