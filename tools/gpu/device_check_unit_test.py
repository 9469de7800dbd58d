#!/usr/bin/env python3
"""device_check.py's CUDA library discovery on fake directory trees (a
toolkit of the wrong major, a PyTorch venv in a hidden directory, cuDNN in
another wheel's folder, a tree deeper than the search goes) and its
Mantissa/PyTorch table."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device_check as dc  # noqa: E402


def touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").close()


class DiscoveryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.saved = (dc.BUNDLE, dc.toolkit_dirs, dc.python_lib_dirs)
        dc.python_lib_dirs = lambda: []
        dc.BUNDLE = os.path.join(self.tmp, "bundle")
        touch(os.path.join(dc.BUNDLE, "lib", "libcudart.so.13"))
        self.toolkit = os.path.join(self.tmp, "usr/local/cuda-12.8/lib64")
        dc.toolkit_dirs = lambda: [self.toolkit]

    def tearDown(self):
        dc.BUNDLE, dc.toolkit_dirs, dc.python_lib_dirs = self.saved

    def test_finds_a_venv_in_a_hidden_directory_and_skips_the_wrong_major(self):
        touch(os.path.join(self.toolkit, "libcublasLt.so.12"))  # CUDA 12: not ours
        site = os.path.join(self.tmp, "opt/torch/.venv/lib/python3.12/site-packages/nvidia")
        touch(os.path.join(site, "cu13/lib/libcublasLt.so.13"))
        touch(os.path.join(site, "cu13/lib/libcublas.so.13"))
        touch(os.path.join(site, "cu13/lib/libnvrtc.so.13"))
        touch(os.path.join(site, "cudnn/lib/libcudnn.so.9"))
        lines = []
        dirs, libs = dc.discover(lines, roots=[os.path.join(self.tmp, "opt")])
        self.assertEqual(dirs, [os.path.join(dc.BUNDLE, "lib"), os.path.join(site, "cu13/lib"),
                                os.path.join(site, "cudnn/lib")])
        self.assertEqual(libs["libcudnn.so.9"], os.path.join(site, "cudnn/lib/libcudnn.so.9"))
        self.assertTrue(any(l.startswith("libcublasLt.so.13: " + site) for l in lines), lines)

    def test_toolkit_of_the_right_major_comes_first(self):
        for n in ("libcublasLt.so.13", "libcublas.so.13", "libcudnn.so.9", "libnvrtc.so.13"):
            touch(os.path.join(self.toolkit, n))
        touch(os.path.join(self.tmp, "home/u/.venv/nvidia/cu13/lib/libcublasLt.so.13"))
        lines = []
        dirs, _ = dc.discover(lines, roots=[os.path.join(self.tmp, "home")])
        self.assertEqual(dirs, [os.path.join(dc.BUNDLE, "lib"), self.toolkit])
        self.assertFalse(any(l.startswith("searched") for l in lines), "searched needlessly")

    def test_the_interpreters_own_nvidia_wheels_need_no_search(self):
        site = os.path.join(self.tmp, "venv/lib/python3.12/site-packages")
        for n in ("libcublasLt.so.13", "libcublas.so.13", "libnvrtc.so.13"):
            touch(os.path.join(site, "nvidia/cu13/lib", n))
        touch(os.path.join(site, "nvidia/cudnn/lib/libcudnn.so.9"))
        saved_path = sys.path[:]
        sys.path.append(site)
        try:
            dc.python_lib_dirs = self.saved[2]
            lines = []
            dirs, _ = dc.discover(lines, roots=[os.path.join(self.tmp, "nowhere")])
        finally:
            sys.path[:] = saved_path
        self.assertEqual(dirs[1:], [os.path.join(site, "nvidia/cu13/lib"),
                                    os.path.join(site, "nvidia/cudnn/lib")])
        self.assertFalse(any(l.startswith("searched") for l in lines), lines)

    def test_missing_required_library_is_reported(self):
        lines = []
        dirs, libs = dc.discover(lines, roots=[self.tmp])
        self.assertEqual(dirs, [os.path.join(dc.BUNDLE, "lib")])
        self.assertNotIn("libcublasLt.so.13", libs)
        self.assertIn("libcublasLt.so.13: NOT FOUND (required)", lines)
        self.assertIn("libcudnn.so.9: NOT FOUND", lines)

    def test_search_depth_is_bounded_and_caches_are_pruned(self):
        deep = os.path.join(self.tmp, "r", *["d"] * 12, "libcudnn.so.9")
        touch(deep)
        touch(os.path.join(self.tmp, "r/.cache/x/libcudnn.so.9"))
        touch(os.path.join(self.tmp, "r/ok/libcudnn.so.9"))
        found, cut = dc.search(["libcudnn.so.9"], roots=[os.path.join(self.tmp, "r")], depth=10)
        self.assertFalse(cut)
        self.assertEqual(found["libcudnn.so.9"], [os.path.join(self.tmp, "r/ok")])


class TableTest(unittest.TestCase):
    def test_ratio_and_reasons(self):
        tmp = tempfile.mkdtemp()
        path = os.path.join(tmp, "bench.csv")
        dc.append_csv(path, ["mantissa", "bf16", "8", "1024", "off", "ok", "100000.0", "81.92",
                             "0.3000", "0.2500", "700.00", "989.4", "20000.0", "loss 10.9"])
        dc.append_csv(path, ["pytorch", "bf16", "8", "1024", "off", "ok", "400000.0", "20.48",
                             "0.9000", "0.8000", "720.00", "989.4", "9000.0",
                             "torch.compile loss 10.9"])
        dc.append_csv(path, ["mantissa", "fp32", "16", "1024", "on", "timeout"] + [""] * 7 +
                      ["killed after 45 s"])
        ctx = dc.Ctx()
        ctx.results, ctx.gpu_name = tmp, "NVIDIA H200"
        table = "\n".join(dc.bench_table(ctx))
        self.assertIn("| bf16 | 8 | off | 100000 | 81.92 | 30.0% | 25.0% | 700 | 20000 | "
                      "400000 | 20.48 | 90.0% | 80.0% | 720 | 9000 | 0.25x |", table)
        self.assertIn("| fp32 | 16 | on | TIMEOUT: killed after 45 s |", table)
        self.assertIn("bf16=989.4", table)


if __name__ == "__main__":
    unittest.main()
