#!/usr/bin/env bash
# Runs plugin_conformance on one backend under `mpirun -np W` for each W in
# $CONFORMANCE_WORLDS (default "2 3"), so its collectives extension is
# checked with W ranks. Passes when, for every W, mpirun exits 0 (every rank
# exited 0: a rank exits 1 when any rank failed a check, and mpirun reports
# the first non-zero exit), rank 0 reports no FAIL and every rank passed,
# and the collectives were really checked with W ranks (not skipped).
#
# With CONFORMANCE_EXPECT_FAIL=<regexp> the run must instead FAIL: mpirun
# exits non-zero and the output matches the regexp (a test that a broken
# rank is caught); with CONFORMANCE_FAIL_ONLY=<regexp> as well, every FAIL
# line (any rank's) must name a check matching it (a test plugin broken in
# one way fails exactly the checks of that way). With
# CONFORMANCE_EXPECT_OUTPUT=<regexp> the output must match it, passing or
# failing. With CONFORMANCE_EXPECT_DEFAULT_ORDER=1 every reduction must also
# have the bits of the rank-order fp32 sum (the cpu backend's stated order;
# mnt_collectives.h).
#
# Open MPI (4.1.4) inside Bazel's linux-sandbox, as tried on the 2-core CI
# container (TMPDIR=/tmp in the sandbox; the deep TEST_TMPDIR works too):
#  * --oversubscribe: 3 ranks on 2 cores ("There are not enough slots
#    available" otherwise).
#  * --allow-run-as-root, only when running as root (mpirun refuses root
#    otherwise).
#  * OMPI_MCA_btl_vader_backing_directory=<private dir>: needed. The
#    sandbox gives each test its own PID namespace, so concurrent tests'
#    mpirun get the same pid and so the same Open MPI job id, and vader's
#    shared-memory files (/dev/shm/vader_segment.<host>.<job id>.<rank> by
#    default) collide: with --runs_per_test=8, 2 of 8 runs failed ("A system
#    call failed during shared memory initialization ... open(2) No such
#    file or directory", then "unable to reach each other"). In a directory
#    of its own each run's files are its own.
#  * TMPDIR=<the same private dir>: Open MPI's session directory (named from
#    the same pid) and PMIx's sockets, for the same reason; removed on exit.
#    It is short (/tmp/mnt-mpi.XXXXXX), keeping socket paths under
#    sun_path's 108 bytes where TEST_TMPDIR is deeper.
#  * OMPI_MCA_btl=self,vader: all ranks are local; shared memory and self
#    only, so Open MPI does not probe tcp interfaces (which, in a sandbox
#    with its network blocked, is known to warn or fail; not needed here).
#  * OMPI_MCA_plm_rsh_agent=false: local ranks need no ssh/rsh; the usual
#    guard for containers without ssh, where mpirun can refuse to start
#    (this one has ssh; not needed here).
#  No "no-sandbox" tag is needed.
#  * timeout: a rank that stops calling the collectives leaves the others
#    waiting in one; the run is killed and fails instead of hanging CI.
set -uo pipefail
tool="$1" plugin="$2"
shift 2  # the rest goes to plugin_conformance
worlds="${CONFORMANCE_WORLDS:-2 3}"
expect_fail="${CONFORMANCE_EXPECT_FAIL:-}"
fail_only="${CONFORMANCE_FAIL_ONLY:-}"
expect_output="${CONFORMANCE_EXPECT_OUTPUT:-}"

if ! command -v mpirun >/dev/null; then
  echo "FAIL: mpirun not found (Debian: apt-get install openmpi-bin libopenmpi-dev)" >&2
  exit 1
fi
session="$(mktemp -d /tmp/mnt-mpi.XXXXXX 2>/dev/null)" ||
  session="$(mktemp -d "${TEST_TMPDIR:-/tmp}/mpi.XXXXXX")"
trap 'rm -rf "$session"' EXIT
export TMPDIR="$session"
export OMPI_MCA_btl_vader_backing_directory="$session"
export OMPI_MCA_btl=self,vader
export OMPI_MCA_plm_rsh_agent=false
root_flag=()
[[ "$(id -u)" == 0 ]] && root_flag=(--allow-run-as-root)

fail=0
for w in $worlds; do
  echo "=== mpirun -np $w plugin_conformance $(basename "$plugin") $*"
  status=0
  out="$(timeout -k 5 "${CONFORMANCE_TIMEOUT_S:-25}" \
         mpirun "${root_flag[@]}" --oversubscribe -np "$w" "$tool" "$plugin" "$@" 2>&1)" ||
    status=$?
  echo "$out"
  if [[ -n "$expect_output" ]] && ! grep -Eq -- "$expect_output" <<<"$out"; then
    echo "FAIL: world size $w: the output does not match '$expect_output'" >&2; fail=1
    continue
  fi
  if [[ -n "$expect_fail" && -n "$fail_only" ]]; then
    # The check name follows "[FAIL] ", after a "rank R: " prefix on ranks
    # other than 0.
    others="$(grep -E '^(rank [0-9]+: )?\[FAIL\] ' <<<"$out" |
              sed -E 's/^(rank [0-9]+: )?\[FAIL\] //' | grep -Ev -- "^($fail_only)" || true)"
    if [[ -n "$others" ]]; then
      echo "FAIL: world size $w: checks other than '$fail_only' failed too:" >&2
      echo "$others" >&2
      fail=1
      continue
    fi
  fi
  if [[ -n "$expect_fail" ]]; then
    if (( status == 0 )); then
      echo "FAIL: world size $w: mpirun exited 0, expected a failure" >&2; fail=1
    elif (( status == 124 || status == 137 )); then
      echo "FAIL: world size $w: timed out instead of failing" >&2; fail=1
    elif ! grep -Eq -- "$expect_fail" <<<"$out"; then
      echo "FAIL: world size $w: the output does not match '$expect_fail'" >&2; fail=1
    else
      echo "OK: world size $w failed as expected (mpirun exit status $status)"
    fi
    continue
  fi
  (( status == 0 )) || { echo "FAIL: world size $w: mpirun exit status $status" >&2; fail=1; continue; }
  if grep -q '\[FAIL\]' <<<"$out"; then
    echo "FAIL: world size $w: a check failed" >&2; fail=1; continue
  fi
  grep -q "^conformance world size $w: .* all $w ranks passed" <<<"$out" ||
    { echo "FAIL: world size $w: no 'all $w ranks passed' summary" >&2; fail=1; continue; }
  n="$(grep -c "^\[PASS\] collectives\[world=$w\]/" <<<"$out")"
  grep -q "^\[PASS\] collectives\[world=$w\]/Communicator_Create" <<<"$out" && (( n >= 50 )) ||
    { echo "FAIL: world size $w: the collectives were not checked with $w ranks" >&2; fail=1; continue; }
  if [[ "${CONFORMANCE_EXPECT_DEFAULT_ORDER:-0}" == 1 ]]; then
    grep -Eq '^\[NOTE\] collectives: ([0-9]+) of \1 passing reductions' <<<"$out" ||
      { echo "FAIL: world size $w: not every reduction has the rank-order fp32 bits" >&2; fail=1; continue; }
  fi
  echo "OK: world size $w: $n collectives checks passed on every rank"
done
exit "$fail"
