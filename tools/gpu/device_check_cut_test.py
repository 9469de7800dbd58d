#!/usr/bin/env python3
"""The device check cut, on a fake bundle (no GPU needed):

- killed from outside mid-part, as the device tool's time limit kills it:
  everything written before the kill is in the results folder
  (environment.txt, results.tsv with the fast test's PASS row and the slow
  test's STARTED row, both tests' output lines in check.log, a summary.md
  that shows the slow test as RUNNING); then --rerun-failed with that
  results.tsv and its own --budget runs only the slow test (the fast one's
  row is copied in) and ends with a whole summary;
- a part whose budget runs out: the item still running reads CUT (not a
  failure: exit status 3), as does the one that could not start; the
  running one's process group and the child it started in a session of
  its own are gone; an item that outruns its own limit reads TIMEOUT (a
  failure: exit status 1);
- GPT-2's training rows (each a fake `train` taking 4 s, one at a time)
  in a part too short for all five: the fp8 row, the part's last, is the
  one CUT, the four others ran."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

RUNFILES = os.environ.get("TEST_SRCDIR", "")


def runfile(path):
    for base in (os.path.join(RUNFILES, "mantissa"), os.path.dirname(os.path.abspath(__file__)) + "/../.."):
        p = os.path.join(base, path)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(path)


FAST = """#!/bin/sh
echo "[ RUN      ] Fast.One"
echo "fast test output line"
echo "[       OK ] Fast.One (1 ms)"
"""
# Hangs after its first line unless FAKE_SLOW_DONE exists beside it; first
# starts a child in a session of its own (setsid) that would outlive it.
SLOW = """#!/bin/sh
echo "[ RUN      ] Slow.One"
here="$(dirname "$0")"
setsid sleep 600 < /dev/null > /dev/null 2>&1 &
echo $! > "$here/$(basename "$0").child"
echo "slow test first line"
if [ -e "$here/FAKE_SLOW_DONE" ]; then
  echo "[       OK ] Slow.One (1 ms)"
  exit 0
fi
exec sleep 600
"""
TRAIN = """#!/bin/sh
echo "mantissa: error: cuda backend: no CUDA device available (fake bundle)" >&2
exit 1
"""
SLOW_TRAIN = """#!/bin/sh
sleep 4
echo "mantissa: error: cuda backend: no CUDA device available (fake bundle)" >&2
exit 1
"""


def write(path, text, mode=0o755):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def read(path):
    with open(path) as f:
        return f.read()


def alive(pid):
    """Running (a zombie, killed and not yet reaped, does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class CutTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.bundle = os.path.join(self.tmp, "bundle")
        for script in ("device_check.py", "device_env.py"):
            write(os.path.join(self.bundle, "scripts", script),
                  read(runfile("tools/gpu/" + script)))
        write(os.path.join(self.bundle, "scripts", "make_token_shard.py"),
              read(runfile("tools/benchmarks/make_token_shard.py")))
        write(os.path.join(self.bundle, "bin", "cuda_fast_test"), FAST)
        write(os.path.join(self.bundle, "bin", "cuda_slow_test"), SLOW)
        write(os.path.join(self.bundle, "bin", "cuda_slower_test"), SLOW)
        write(os.path.join(self.bundle, "bin", "train"), TRAIN)
        # Stand-ins for cuBLAS, so the environment part finds what it requires.
        for lib in ("libcublasLt.so.13", "libcublas.so.13"):
            write(os.path.join(self.bundle, "lib", lib), "", mode=0o644)
        # Nothing to find: the environment part takes a moment.
        self.roots = os.path.join(self.tmp, "no_roots")
        os.makedirs(self.roots)

    def tearDown(self):
        for name in ("cuda_slow_test", "cuda_slower_test"):
            child = os.path.join(self.bundle, "bin", name + ".child")
            if os.path.exists(child):
                try:
                    os.kill(int(read(child)), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check(self, results, *extra, kill_after=None, only="fast|slow_test|^train mlp fp32",
              parts="test,train", workers=2):
        cmd = [sys.executable, os.path.join(self.bundle, "scripts", "device_check.py"),
               f"--results={results}", f"--parts={parts}", f"--workers={workers}",
               f"--train_workers={workers}", "--only=" + only, "--search_roots=" + self.roots,
               "--part_budget=env=2"] + list(extra)
        # PATH without nvidia-smi or compute-sanitizer: a machine with no GPU.
        env = dict(os.environ, PATH="/usr/bin:/bin")
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        if kill_after is None:
            out = p.communicate(timeout=120)[0].decode()
            return p.returncode, out
        # Kill once the slow test is running (its first line is in the log).
        log = os.path.join(results, "check.log")
        deadline = time.time() + 60
        while time.time() < deadline:
            if os.path.exists(log) and "slow test first line" in read(log):
                break
            time.sleep(0.2)
        time.sleep(kill_after)
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, ""

    def test_a_killed_run_keeps_everything_written_before_the_kill(self):
        first = os.path.join(self.tmp, "first")
        self.check(first, kill_after=1.0)
        files = sorted(os.listdir(first))
        self.assertLessEqual(len(files), 8, files)
        for name in ("environment.txt", "results.tsv", "check.log", "summary.md"):
            self.assertIn(name, files)
        tsv = read(os.path.join(first, "results.tsv"))
        self.assertRegex(tsv, r"\ttest\tcuda_fast_test\tPASS\t")
        self.assertRegex(tsv, r"\ttest\tcuda_slow_test\tSTARTED\t")
        self.assertNotRegex(tsv, r"cuda_slow_test\t(PASS|FAIL|TIMEOUT|CUT)")
        log = read(os.path.join(first, "check.log"))
        self.assertIn("[cuda_fast_test] fast test output line", log)
        self.assertIn("[cuda_slow_test] slow test first line", log)
        summary = read(os.path.join(first, "summary.md"))
        self.assertRegex(summary, r"\| cuda_fast_test \| PASS \|")
        self.assertRegex(summary, r"\| cuda_slow_test \| RUNNING \|")

        # The rerun, with a budget of its own: only the slow test runs (it
        # now finishes); the fast test's row comes from the first run.
        write(os.path.join(self.bundle, "bin", "FAKE_SLOW_DONE"), "")
        second = os.path.join(self.tmp, "second")
        rc, out = self.check(second, "--rerun-failed=" + os.path.join(first, "results.tsv"),
                             "--budget=60")
        self.assertEqual(rc, 0, out)
        log = read(os.path.join(second, "check.log"))
        self.assertIn("[cuda_slow_test] slow test first line", log)
        self.assertNotIn("[cuda_fast_test]", log)
        summary = read(os.path.join(second, "summary.md"))
        self.assertRegex(summary, r"\| cuda_fast_test \| PASS \| \d+ s \| earlier run: ")
        self.assertRegex(summary, r"\| cuda_slow_test \| PASS \|")
        self.assertIn("budget 60 s", summary)
        self.assertNotIn("RUNNING", summary)

    def test_an_item_at_its_parts_deadline_reads_cut_and_everything_it_started_dies(self):
        results = os.path.join(self.tmp, "cut")
        # One worker: slow runs until the test part's deadline (2 + 6 s),
        # slower never starts; neither is a failure.
        rc, out = self.check(results, "--part_budget=test=6", only="slow", parts="test",
                             workers=1)
        self.assertEqual(rc, 3, out)
        tsv = read(os.path.join(results, "results.tsv"))
        self.assertRegex(tsv, r"\ttest\tcuda_slower_test\tCUT\t0\tnot started: the test part's "
                              r"budget was spent")
        self.assertRegex(tsv, r"\ttest\tcuda_slow_test\tCUT\t\d+\tstopped after \d+ s: the test "
                              r"part's budget ran out")
        summary = read(os.path.join(results, "summary.md"))
        self.assertRegex(summary, r"Items: 2 CUT, 1 PASS, 2 SKIPPED")
        self.assertIn("CUT = stopped at, or not started before, its part's deadline: not a "
                      "failure", summary)
        self.assertRegex(summary, r"\| cuda_slow_test \| CUT \|")
        self.assertIn("killed after", read(os.path.join(results, "check.log")))
        child = int(read(os.path.join(self.bundle, "bin", "cuda_slow_test.child")))
        self.assertFalse(alive(child), f"the slow test's setsid child {child} outlived the cut")

    def test_an_item_past_its_own_limit_is_a_timeout_and_a_failure(self):
        results = os.path.join(self.tmp, "timeout")
        rc, out = self.check(results, "--test_timeout=2", only="slow_test", parts="test",
                             workers=1)
        self.assertEqual(rc, 1, out)
        tsv = read(os.path.join(results, "results.tsv"))
        self.assertRegex(tsv, r"\ttest\tcuda_slow_test\tTIMEOUT\t\d+\tkilled at its own limit, 2 s")
        child = int(read(os.path.join(self.bundle, "bin", "cuda_slow_test.child")))
        self.assertFalse(alive(child), f"the slow test's setsid child {child} outlived its kill")

    def test_a_part_out_of_time_loses_the_fp8_row_first(self):
        # Rows start about 4 s apart from the environment's end (s0, well
        # under 2 s); none starts within 5 s of the train part's deadline,
        # 2 + 18 = 20 s, so the fifth (fp8, at s0 + 16) is CUT and the
        # fourth (s0 + 12) is not, for any s0 in 0..2 s.
        write(os.path.join(self.bundle, "bin", "train"), SLOW_TRAIN)
        results = os.path.join(self.tmp, "short")
        rc, out = self.check(results, "--part_budget=train=18", only="^train gpt2 ",
                             parts="train", workers=1)
        self.assertEqual(rc, 3, out)
        tsv = read(os.path.join(results, "results.tsv"))
        for prec in ("fp32", "tf32", "bf16", "fp16"):
            self.assertRegex(tsv, r"\ttrain gpt2 %s\tSKIPPED\t\d+\tno CUDA device" % prec)
        self.assertRegex(tsv, r"\ttrain gpt2 fp8\tCUT\t0\tnot started: the train part's budget")
        started = [l.split("\t")[2] for l in tsv.splitlines() if "\tSTARTED\t" in l]
        self.assertEqual(started, ["train gpt2 fp32", "train gpt2 tf32", "train gpt2 bf16",
                                   "train gpt2 fp16"])


if __name__ == "__main__":
    unittest.main()
