#!/usr/bin/env python3
"""The device check cut mid-stage, as the device tool's time limit cuts it:
a fake bundle (no GPU needed) whose stage 1 holds a fast test and a test
that hangs; the check's whole process group is killed while the slow test
runs. Everything written before the cut must be in the results folder:
environment.txt, results.tsv with the fast test's PASS row and the slow
test's STARTED row, both tests' output lines in stage1.log (the hanging
test's first line included), and a summary.md that shows the slow test as
RUNNING. Then --rerun-failed with that results.tsv runs only the slow test
(the fast one's row is copied in) and ends with a whole summary.

And a stage whose budget runs out: of GPT-2's training rows (each a fake
`train` taking 3 s, one at a time) the fp8 row, the pass's last, is the one
left NOT-RUN, the four others ran."""
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
# Hangs after its first line unless FAKE_SLOW_DONE exists beside it.
SLOW = """#!/bin/sh
echo "[ RUN      ] Slow.One"
echo "slow test first line"
if [ -e "$(dirname "$0")/FAKE_SLOW_DONE" ]; then
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
sleep 3
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


class CutTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.bundle = os.path.join(self.tmp, "bundle")
        write(os.path.join(self.bundle, "scripts", "device_check.py"),
              read(runfile("tools/gpu/device_check.py")))
        write(os.path.join(self.bundle, "scripts", "make_token_shard.py"),
              read(runfile("tools/benchmarks/make_token_shard.py")))
        write(os.path.join(self.bundle, "bin", "cuda_fast_test"), FAST)
        write(os.path.join(self.bundle, "bin", "cuda_slow_test"), SLOW)
        write(os.path.join(self.bundle, "bin", "train"), TRAIN)
        os.makedirs(os.path.join(self.bundle, "lib"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check(self, results, *extra, cut_after=None, only="fast|slow|train mlp fp32",
              budget=120, workers=2):
        cmd = [sys.executable, os.path.join(self.bundle, "scripts", "device_check.py"),
               f"--results={results}", "--stage=1", f"--stage1_budget={budget}",
               f"--workers={workers}", "--only=" + only] + list(extra)
        # PATH without nvidia-smi or compute-sanitizer: a machine with no GPU.
        env = dict(os.environ, PATH="/usr/bin:/bin")
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        if cut_after is None:
            out = p.communicate(timeout=120)[0].decode()
            return p.returncode, out
        # Cut once the slow test is running (its first line is in the log).
        log = os.path.join(results, "stage1.log")
        deadline = time.time() + 60
        while time.time() < deadline:
            if os.path.exists(log) and "slow test first line" in read(log):
                break
            time.sleep(0.2)
        time.sleep(cut_after)
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, ""

    def test_a_cut_run_keeps_everything_written_before_the_cut(self):
        first = os.path.join(self.tmp, "first")
        self.check(first, cut_after=1.0)
        files = sorted(os.listdir(first))
        self.assertLessEqual(len(files), 8, files)
        for name in ("environment.txt", "results.tsv", "stage1.log", "summary.md"):
            self.assertIn(name, files)
        tsv = read(os.path.join(first, "results.tsv"))
        self.assertRegex(tsv, r"\t1\ttest\tcuda_fast_test\tPASS\t")
        self.assertRegex(tsv, r"\t1\ttest\tcuda_slow_test\tSTARTED\t")
        self.assertNotRegex(tsv, r"cuda_slow_test\t(PASS|FAIL|TIMEOUT)")
        self.assertRegex(tsv, r"\t1\ttrain\ttrain mlp fp32\tSKIPPED\tno CUDA device|"
                              r"train mlp fp32\tSKIPPED\t\d+\tno CUDA device")
        log = read(os.path.join(first, "stage1.log"))
        self.assertIn("[cuda_fast_test] fast test output line", log)
        self.assertIn("[cuda_slow_test] slow test first line", log)
        summary = read(os.path.join(first, "summary.md"))
        self.assertRegex(summary, r"\| cuda_fast_test \| PASS \|")
        self.assertRegex(summary, r"\| cuda_slow_test \| RUNNING \|")

        # The rerun: only the slow test runs (it now finishes); the fast
        # test's row comes from the first run.
        write(os.path.join(self.bundle, "bin", "FAKE_SLOW_DONE"), "")
        second = os.path.join(self.tmp, "second")
        rc, out = self.check(second, "--rerun-failed=" + os.path.join(first, "results.tsv"))
        self.assertEqual(rc, 0, out)
        log = read(os.path.join(second, "stage1.log"))
        self.assertIn("[cuda_slow_test] slow test first line", log)
        self.assertNotIn("[cuda_fast_test]", log)
        summary = read(os.path.join(second, "summary.md"))
        self.assertRegex(summary, r"\| cuda_fast_test \| PASS \| \d+ s \| earlier run: ")
        self.assertRegex(summary, r"\| cuda_slow_test \| PASS \|")
        self.assertNotIn("RUNNING", summary)

    def test_a_stage_out_of_time_loses_the_fp8_row_first(self):
        # Rows start at about 0, 3, 6, 9 and 12 s; none starts within 5 s of
        # the 15.5 s budget, so the fifth (fp8) is NOT-RUN (1.5 s of margin
        # either way).
        write(os.path.join(self.bundle, "bin", "train"), SLOW_TRAIN)
        results = os.path.join(self.tmp, "short")
        rc, out = self.check(results, only="^train gpt2 ", budget=15.5, workers=1)
        self.assertEqual(rc, 0, out)
        tsv = read(os.path.join(results, "results.tsv"))
        for prec in ("fp32", "tf32", "bf16", "fp16"):
            self.assertRegex(tsv, r"\ttrain gpt2 %s\tSKIPPED\t\d+\tno CUDA device" % prec)
        self.assertRegex(tsv, r"\ttrain gpt2 fp8\tNOT-RUN\t0\tno time left in stage 1")
        started = [l.split("\t")[3] for l in tsv.splitlines() if "\tSTARTED\t" in l]
        self.assertEqual(started, ["train gpt2 fp32", "train gpt2 tf32", "train gpt2 bf16",
                                   "train gpt2 fp16"])


if __name__ == "__main__":
    unittest.main()
