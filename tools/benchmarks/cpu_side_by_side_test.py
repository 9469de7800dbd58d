#!/usr/bin/env python3
"""cpu_side_by_side on the real benchmarks, PyTorch left out: the conv table
(cnn_benchmark's passes, parsed per layer) and the oneDNN matmul peak come
out as numbers, and a bad --torch_engines is one error line."""
import os
import subprocess
import sys
import unittest

from tools.benchmarks import cpu_side_by_side as side


def script():
    return side.runfile("tools/benchmarks/cpu_side_by_side.py")


class CpuSideBySideTest(unittest.TestCase):
    def run_side(self, *flags):
        env = side.with_runfiles_dir(dict(os.environ, OMP_NUM_THREADS="1"))
        return subprocess.run([sys.executable, script(), "--python=", "--threads=1"] +
                              list(flags), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=600)

    def test_conv_table_and_peak(self):
        r = self.run_side("--workloads=conv", "--precisions=bf16", "--repeats=1",
                          "--conv_batch=1", "--conv_iters=1", "--peak=128")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertRegex(r.stdout, r"matmul peak \(best of 128\^3 and gpt-8's shapes\), "
                         r"TFLOP/s: oneDNN \d+\.\d+\.\d+ .*"
                         r"bf16 \d+\.\d+, fp32 \d+\.\d+; torch.mm 128\^3 skipped")
        rows = [l for l in r.stdout.splitlines() if l.startswith("| ") and "| bf16 |" in l]
        self.assertEqual(len(rows), 7, r.stdout)  # ResNet-50's seven layer shapes
        for row in rows:
            # "<Mantissa> / skipped" in each of the three passes, never "failed".
            self.assertRegex(row, r"^\| [^|]+ \| bf16 \| \d+\.\d+ / skipped \| "
                             r"\d+\.\d+ / skipped \| \d+\.\d+ / skipped \|$")

    def test_unknown_engine_is_one_line(self):
        r = self.run_side("--torch_engines=jit")
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(r.stdout.strip().splitlines(),
                         ["mantissa: error: --torch_engines: unknown engine 'jit' "
                          "(expected eager, compiled)"])


if __name__ == "__main__":
    unittest.main()
