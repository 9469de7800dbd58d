#!/usr/bin/env python3
"""The device check's pieces: the CUDA library discovery (device_env.py) on
fake directory trees (a toolkit of the wrong major, a PyTorch venv in a
hidden directory, cuDNN in another wheel's folder, a tree deeper than the
search goes); the interpreter's (fake interpreters on PATH and in venvs,
CUDA 13 preferred, a hanging one); the plan (its total within the device
tool's 540 s, a rerun's own budget); the Mantissa/PyTorch table, the goals,
and the order items run in (fp8 last, so a cut loses it first)."""
import json
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device_check as dc  # noqa: E402
import device_env as de  # noqa: E402


def touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").close()


class DiscoveryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.saved = de.toolkit_dirs
        self.bundle = os.path.join(self.tmp, "bundle")
        touch(os.path.join(self.bundle, "lib", "libcudart.so.13"))
        self.toolkit = os.path.join(self.tmp, "usr/local/cuda-12.8/lib64")
        de.toolkit_dirs = lambda roots: [self.toolkit]

    def tearDown(self):
        de.toolkit_dirs = self.saved

    def test_finds_a_venv_in_a_hidden_directory_and_skips_the_wrong_major(self):
        touch(os.path.join(self.toolkit, "libcublasLt.so.12"))  # CUDA 12: not ours
        site = os.path.join(self.tmp, "opt/torch/.venv/lib/python3.12/site-packages/nvidia")
        touch(os.path.join(site, "cu13/lib/libcublasLt.so.13"))
        touch(os.path.join(site, "cu13/lib/libcublas.so.13"))
        touch(os.path.join(site, "cu13/lib/libnvrtc.so.13"))
        touch(os.path.join(site, "cudnn/lib/libcudnn.so.9"))
        lines = []
        dirs, libs = de.discover(lines, self.bundle, None, roots=[os.path.join(self.tmp, "opt")])
        self.assertEqual(dirs, [os.path.join(self.bundle, "lib"), os.path.join(site, "cu13/lib"),
                                os.path.join(site, "cudnn/lib")])
        self.assertEqual(libs["libcudnn.so.9"], os.path.join(site, "cudnn/lib/libcudnn.so.9"))
        self.assertTrue(any(l.startswith("libcublasLt.so.13: " + site) for l in lines), lines)

    def test_toolkit_of_the_right_major_comes_first(self):
        for n in ("libcublasLt.so.13", "libcublas.so.13", "libcudnn.so.9", "libnvrtc.so.13",
                  "libnccl.so.2"):
            touch(os.path.join(self.toolkit, n))
        touch(os.path.join(self.tmp, "home/u/.venv/nvidia/cu13/lib/libcublasLt.so.13"))
        lines = []
        dirs, _ = de.discover(lines, self.bundle, None, roots=[os.path.join(self.tmp, "home")])
        self.assertEqual(dirs, [os.path.join(self.bundle, "lib"), self.toolkit])
        self.assertFalse(any(l.startswith("searched") for l in lines), "searched needlessly")

    def test_the_chosen_interpreters_nvidia_wheels_need_no_search(self):
        site = os.path.join(self.tmp, "venv/lib/python3.12/site-packages")
        for n in ("libcublasLt.so.13", "libcublas.so.13", "libnvrtc.so.13"):
            touch(os.path.join(site, "nvidia/cu13/lib", n))
        touch(os.path.join(site, "nvidia/cudnn/lib/libcudnn.so.9"))
        touch(os.path.join(site, "torch/lib/libnccl.so.2"))
        python = {"site": [site], "torch_lib": os.path.join(site, "torch/lib")}
        lines = []
        dirs, _ = de.discover(lines, self.bundle, python, roots=[os.path.join(self.tmp, "nowhere")])
        self.assertEqual(dirs[1:], [os.path.join(site, "nvidia/cu13/lib"),
                                    os.path.join(site, "nvidia/cudnn/lib"),
                                    os.path.join(site, "torch/lib")])
        self.assertFalse(any(l.startswith("searched") for l in lines), lines)

    def test_missing_required_library_is_reported(self):
        lines = []
        dirs, libs = de.discover(lines, self.bundle, None, roots=[self.tmp])
        self.assertEqual(dirs, [os.path.join(self.bundle, "lib")])
        self.assertNotIn("libcublasLt.so.13", libs)
        self.assertIn("libcublasLt.so.13: NOT FOUND (required)", lines)
        self.assertIn("libcudnn.so.9: NOT FOUND", lines)
        self.assertIn("libnccl.so.2: NOT FOUND", lines)

    def test_search_depth_is_bounded_and_caches_are_pruned(self):
        deep = os.path.join(self.tmp, "r", *["d"] * 12, "libcudnn.so.9")
        touch(deep)
        touch(os.path.join(self.tmp, "r/.cache/x/libcudnn.so.9"))
        touch(os.path.join(self.tmp, "r/ok/libcudnn.so.9"))
        found, cut = de.search(["libcudnn.so.9"], roots=[os.path.join(self.tmp, "r")], depth=10)
        self.assertFalse(cut)
        self.assertEqual(found["libcudnn.so.9"], [os.path.join(self.tmp, "r/ok")])


def fake_python(path, torch="", cuda="", mark=""):
    """An executable that answers the probe as an interpreter with that
    torch (none when torch is ''); `mark`: a file it creates when run."""
    info = {"executable": path, "version": "3.12.3", "prefix": os.path.dirname(os.path.dirname(path)),
            "site": [os.path.dirname(os.path.dirname(path)) + "/lib/python3.12/site-packages"]}
    if torch:
        info.update(torch=torch, torch_cuda=cuda, torch_lib="/x/torch/lib")
    else:
        info["error"] = "ModuleNotFoundError: No module named 'torch'"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + (f"touch '{mark}'\n" if mark else "") +
                f"echo 'MANTISSA_PROBE {json.dumps(info)}'\n")
    os.chmod(path, 0o755)
    return path


class InterpreterTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def test_candidates_path_first_then_venvs_without_duplicates(self):
        bin_dir = os.path.join(self.tmp, "usr/bin")
        fake_python(os.path.join(bin_dir, "python3"))
        os.symlink("python3", os.path.join(bin_dir, "python"))  # one interpreter, two names
        venv = fake_python(os.path.join(self.tmp, "opt/torch/.venv/bin/python3"), "2.11.0", "13.0")
        conda = fake_python(os.path.join(self.tmp, "opt/conda/envs/t/bin/python3"), "2.4", "12.4")
        roots = [os.path.join(self.tmp, "opt")]
        got = de.python_candidates(roots, path=bin_dir + ":" + os.path.join(self.tmp, "nothing"),
                                   environ={})
        self.assertEqual(got, [os.path.join(bin_dir, "python3"), venv, conda])

    def test_chooses_the_cuda_13_torch_and_stops_there(self):
        bin_dir = os.path.join(self.tmp, "bin")
        fake_python(os.path.join(bin_dir, "python3"), "2.11.0+cpu", "")
        cu12 = fake_python(os.path.join(self.tmp, "opt/a/.venv/bin/python3"), "2.5.0+cu124", "12.4")
        cu13 = fake_python(os.path.join(self.tmp, "opt/b/.venv/bin/python3"), "2.11.0+cu130", "13.0")
        after = os.path.join(self.tmp, "probed")
        fake_python(os.path.join(self.tmp, "opt/c/.venv/bin/python3"), "2.11.0+cu130", "13.0",
                    mark=after)
        lines = []
        got = de.choose_python(lines, [os.path.join(self.tmp, "opt")], path=bin_dir, environ={})
        self.assertEqual(got["executable"], cu13)
        self.assertEqual(got["torch_cuda"], "13.0")
        self.assertFalse(os.path.exists(after), "probed past the first CUDA 13 torch")
        self.assertEqual([l.split(":")[0].strip() for l in lines],
                         [os.path.join(bin_dir, "python3"), cu12, cu13])
        self.assertIn("torch 2.5.0+cu124, torch's CUDA 12.4", lines[1])

    def test_without_cuda_13_the_best_other_and_none_without_torch(self):
        bin_dir = os.path.join(self.tmp, "bin")
        fake_python(os.path.join(bin_dir, "python3"), "2.11.0+cpu", "")
        cu12 = fake_python(os.path.join(self.tmp, "opt/a/.venv/bin/python3"), "2.5.0", "12.4")
        got = de.choose_python([], [os.path.join(self.tmp, "opt")], path=bin_dir, environ={})
        self.assertEqual(got["executable"], cu12)
        empty = os.path.join(self.tmp, "empty")
        fake_python(os.path.join(empty, "python3"))
        lines = []
        self.assertIsNone(de.choose_python(lines, [os.path.join(self.tmp, "none")], path=empty,
                                           environ={}))
        self.assertIn("no torch (ModuleNotFoundError", lines[0])

    def test_a_venv_deep_under_a_root_is_found_by_its_pyvenv_cfg(self):
        deep = os.path.join(self.tmp, "opt/x/y/envs/torch")
        touch(os.path.join(deep, "pyvenv.cfg"))
        py = fake_python(os.path.join(deep, "bin/python3"), "2.11.0+cu130", "13.0")
        lines = []
        got = de.choose_python(lines, [os.path.join(self.tmp, "opt")],
                               path=os.path.join(self.tmp, "nothing"), environ={})
        self.assertEqual(got["executable"], py)
        self.assertTrue(any("for pyvenv.cfg" in l and "1 found" in l for l in lines), lines)

    def test_a_hanging_interpreter_costs_at_most_the_time_given(self):
        hang = os.path.join(self.tmp, "bin/python3")
        os.makedirs(os.path.dirname(hang))
        with open(hang, "w") as f:
            f.write("#!/bin/sh\nexec sleep 30\n")
        os.chmod(hang, 0o755)
        lines = []
        t = time.time()
        got = de.choose_python(lines, [os.path.join(self.tmp, "none")], seconds=2,
                               path=os.path.dirname(hang), environ={})
        self.assertIsNone(got)
        self.assertLess(time.time() - t, 10)
        self.assertIn("no answer in", lines[0])

    def test_the_real_interpreter_answers_the_probe(self):
        info, why = de.probe(sys.executable)
        self.assertIsNotNone(info, why)
        self.assertEqual(info["version"], sys.version.split()[0])


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
        table = "\n".join(dc.bench_table(dc.read_csv(path), dc.DATASHEET["H200"]))
        self.assertIn("| bf16 | 8 | off | 100000 | 81.92 | 30.0% | 25.0% | 700 | 20000 | "
                      "400000 | 20.48 | 90.0% | 80.0% | 720 | 9000 | 0.25x |", table)
        self.assertIn("| fp32 | 16 | on | TIMEOUT: killed after 45 s |", table)
        self.assertIn("bf16=989.4", table)

    def test_fp8_row_after_the_16_bit_ones_without_a_pytorch_pair(self):
        tmp = tempfile.mkdtemp()
        path = os.path.join(tmp, "bench.csv")
        for prec in ("fp8", "bf16", "fp32"):
            dc.append_csv(path, ["mantissa", prec, "16", "1024", "off", "skipped"] + [""] * 7 +
                          ["no CUDA device"])
        dc.append_csv(path, ["pytorch", "bf16", "16", "1024", "off", "skipped"] + [""] * 7 +
                      ["torch has no CUDA device"])
        lines = dc.bench_table(dc.read_csv(path), dc.DATASHEET["H100 80GB HBM3"])
        rows = [l for l in lines if l.startswith("| fp") or l.startswith("| bf")]
        self.assertEqual([r.split(" | ")[0] for r in rows], ["| fp32", "| bf16", "| fp8"])
        self.assertIn("| fp8 | 16 | off | SKIPPED: no CUDA device | - | - | - | - | - | "
                      "none: no built-in FP8 training in PyTorch |", rows[-1])
        self.assertIn("fp8=1979", "\n".join(lines))


class LibraryProblemsTest(unittest.TestCase):
    def test_cudnn_without_nvrtc_is_a_problem(self):
        libs = {n: "/x/" + n for n in de.REQUIRED + ["libcudnn.so.9"]}
        self.assertEqual(len(de.library_problems(libs)), 1)
        self.assertIn("libnvrtc.so.13", de.library_problems(libs)[0])
        libs["libnvrtc.so.13"] = "/x/libnvrtc.so.13"
        self.assertEqual(de.library_problems(libs), [])
        # Without cuDNN, NVRTC is not needed; without cuBLASLt nothing runs.
        self.assertEqual(de.library_problems({n: "/x/" + n for n in de.REQUIRED}), [])
        self.assertIn("libcublasLt.so.13 not found (required)",
                      de.library_problems({"libcublas.so.13": "/x"}))


GTEST_SKIPPED = """[ RUN      ] CudaKernelsTest.Add
SKIPPED: no CUDA device (cudaGetDeviceCount: CUDA driver version is insufficient)
[  SKIPPED ] CudaKernelsTest.Add (0 ms)
"""
GTEST_PASSED = """[ RUN      ] CudaKernelsTest.Add
[       OK ] CudaKernelsTest.Add (3 ms)
[ RUN      ] CudaKernelsTest.Mul
[       OK ] CudaKernelsTest.Mul (3 ms)
"""


class ClassifierTest(unittest.TestCase):
    def test_a_skip_is_a_skip_without_a_gpu_and_a_failure_with_one(self):
        self.assertEqual(dc.gtest_classifier("")(0, GTEST_SKIPPED)[0], "SKIPPED")
        status, detail = dc.gtest_classifier("GPU 0: NVIDIA H200 (UUID: x)")(0, GTEST_SKIPPED)
        self.assertEqual(status, "FAIL")
        self.assertIn("driver version is insufficient", detail)

    def test_gtest_pass_and_fail(self):
        self.assertEqual(dc.gtest_classifier("gpu")(0, GTEST_PASSED),
                         ("PASS", "2 passed, 0 skipped, 0 failed"))
        out = GTEST_PASSED + "[  FAILED  ] CudaKernelsTest.Mul (3 ms)\n"
        status, detail = dc.gtest_classifier("gpu")(1, out)
        self.assertEqual(status, "FAIL")
        self.assertIn("CudaKernelsTest.Mul", detail)
        status, detail = dc.gtest_classifier("")(127, "bin/x: error while loading shared "
                                                      "libraries: libprotobuf.so.32: cannot open")
        self.assertEqual(status, "FAIL")
        self.assertIn("libprotobuf.so.32", detail)

    def test_train_without_device(self):
        out = "mantissa: error: cuda backend: no CUDA device available (cudaGetDeviceCount: x)\n"
        self.assertEqual(dc.train_classifier("")(1, out), ("SKIPPED", "no CUDA device"))
        self.assertEqual(dc.train_classifier("/dev/nvidia0 exists")(1, out)[0], "FAIL")
        ok = "step   1/12  loss 10.98\nstep  12/12  loss 7.5\neval  step 12 loss 7.4\n"
        self.assertEqual(dc.train_classifier("gpu")(0, ok), ("PASS", "loss 10.98 -> 7.5; eval 7.4"))
        self.assertEqual(dc.train_classifier("gpu")(0, ok.replace("7.5", "nan"))[0], "FAIL")

    def test_fp8_without_fp8_tensor_cores(self):
        out = ("mantissa: error: precision 'fp8' runs GEMMs in FP8, but backend 'cuda' (NVIDIA "
               "A100-SXM4-80GB) does not support SCALED_CAST (FP8 tensor cores: sm_89 or newer); "
               "use --precision=bf16\n")
        status, detail = dc.train_classifier("GPU 0: NVIDIA A100")(1, out)
        self.assertEqual(status, "SKIPPED")
        self.assertIn("sm_89 or newer", detail)
        # On a GPU the check knows has them (H100/H200) the refusal is a failure.
        self.assertEqual(dc.train_classifier("GPU 0: NVIDIA H200", fp8_hardware=True)(1, out)[0],
                         "FAIL")

    def test_sanitizer(self):
        clean = "========= COMPUTE-SANITIZER\n" + GTEST_PASSED + "========= ERROR SUMMARY: 0 errors\n"
        self.assertEqual(dc.sanitizer_classifier(0, clean)[0], "PASS")
        bad = ("========= Invalid __global__ write of size 4 bytes\n"
               "========= ERROR SUMMARY: 3 errors\n")
        status, detail = dc.sanitizer_classifier(86, bad)
        self.assertEqual(status, "FAIL")
        self.assertIn("3 errors", detail)
        self.assertIn("Invalid __global__ write", detail)
        status, detail = dc.sanitizer_classifier(1, "========= Error: Device not supported\n")
        self.assertEqual(status, "SKIPPED")

    def test_conformance(self):
        out = "[FAIL] backend/create: cuda backend: no CUDA device available (x)\nconformance: 0 passed, 1 failed\n"
        self.assertEqual(dc.conformance_classifier("")(1, out)[0], "SKIPPED")
        self.assertEqual(dc.conformance_classifier("gpu")(1, out)[0], "FAIL")
        self.assertEqual(dc.conformance_classifier("gpu")(0, "[PASS] a\nconformance: 40 passed, 0 failed\n")[0],
                         "PASS")


class OrderTest(unittest.TestCase):
    """fp8 runs after everything else it competes with for time: the last
    item of the train part, the last of Mantissa's benchmark rows, and no
    PyTorch row."""

    def test_train_part_trains_gpt2_fp8_last(self):
        ctx = dc.plan_ctx(dc.parse_args([]))
        items = dc.train_items(ctx)
        names = [i.name for i in items]
        self.assertEqual(len(names), 15, names)
        self.assertEqual(names[-1], "train gpt2 fp8")
        self.assertEqual(names[-3:-1], ["train gpt2 bf16 adamw8bit", "train gpt2 bf16 adafactor"])
        self.assertLess(names.index("train gpt2 bf16"), names.index("train gpt2 fp8"))
        self.assertNotIn("train mlp fp8", names)
        fp8, bf16 = items[-1], items[names.index("train gpt2 bf16")]
        # The same job as the bf16 row but for the precision.
        self.assertEqual([a for a in fp8.cmd if not a.startswith("--precision=")],
                         [a for a in bf16.cmd if not a.startswith("--precision=")])
        self.assertIn("--precision=fp8", fp8.cmd)
        self.assertIn("--model_options=preset=gpt2-124m", fp8.cmd)
        # The optimizer rows: the bf16 row's job with one flag more.
        for optimizer in ("adamw8bit", "adafactor"):
            row = items[names.index("train gpt2 bf16 " + optimizer)]
            self.assertEqual(row.cmd, bf16.cmd + ["--optimizer=" + optimizer])

    def test_bench_part_runs_fp8_last_and_pytorch_never(self):
        args = dc.parse_args([])
        rows = dc.bench_rows(args)
        self.assertEqual(rows[0], ("bf16", "16", "off"))
        self.assertEqual(rows[-1], ("fp8", "16", "off"))
        self.assertEqual(len(rows), 6)
        self.assertNotIn("fp8", dc.TORCH_PRECISIONS)
        self.assertEqual([r[0] for r in dc.torch_rows(args)], ["bf16", "fp16", "tf32", "fp32"])


class PlanTest(unittest.TestCase):
    """The one-call plan: parts in priority order within the budget, which
    fits the device tool's timeout_s of 540; a rerun's own budget."""

    def plan(self, *argv):
        args = dc.parse_args(list(argv))
        wanted, _ = dc.make_wanted(args)
        items = dc.plan_items(dc.plan_ctx(args))
        # Stand-ins for the bundle's GPU tests (none beside this source file).
        items["test"] = [(f"cuda_{i}_test", "<= 120 s") for i in range(17)]
        return args, wanted, items, dc.schedule(args, wanted, items)

    def test_default_plan_is_in_priority_order_and_fits_540_s(self):
        args, wanted, items, sched = self.plan()
        self.assertEqual([p for p, _, _, _ in sched], dc.PART_NAMES)
        self.assertEqual(dc.PART_NAMES, ["env", "test", "train", "bench", "torch", "rest"])
        self.assertEqual(sum(b for _, b, _, _ in sched), dc.BUDGET)
        self.assertLessEqual(sched[-1][3], dc.TOOL_TIMEOUT - 10)
        for (_, _, _, end), (_, _, start, _) in zip(sched, sched[1:]):
            self.assertEqual(end, start)
        text = dc.plan_text(args, wanted, items)
        self.assertIn("total: 525 s (budget 525 s; device tool timeout_s 540)", text)
        self.assertIn("cuda_16_test", text)
        self.assertIn("train gpt2 fp8  (<= 60 s)", text)

    def test_a_short_budget_cuts_the_least_important_parts(self):
        _, _, _, sched = self.plan("--budget=200")
        ends = {p: end for p, _, _, end in sched}
        self.assertEqual(ends["env"], 40)
        self.assertEqual(ends["test"], 160)
        self.assertEqual(ends["train"], 200)
        self.assertEqual(ends["rest"], 200)

    def test_a_rerun_plans_only_the_parts_it_runs(self):
        tmp = tempfile.mkdtemp()
        tsv = os.path.join(tmp, "results.tsv")
        with open(tsv, "w") as f:
            f.write("\t".join(dc.TSV_HEADER) + "\n")
            for part, names in (("test", [f"cuda_{i}_test" for i in range(17)]),
                                ("train", [i.name for i in dc.train_items(dc.plan_ctx(dc.parse_args([])))])):
                for n in names:
                    f.write(f"1\t{part}\t{n}\tPASS\t1\tok\n")
            f.write("300\ttorch\tpytorch bf16 B=16 ckpt=off\tCUT\t0\tstopped\n")
        args, wanted, items, sched = self.plan("--rerun-failed=" + tsv, "--budget=150",
                                               "--parts=test,train,bench,torch")
        self.assertEqual([(p, s, e) for p, _, s, e in sched],
                         [("env", 0, 40), ("bench", 40, 150), ("torch", 150, 150)])
        _, _, _, sched = self.plan("--rerun-failed=" + tsv, "--budget=200", "--parts=torch",
                                   "--part_budget=env=20")
        self.assertEqual([(p, s, e) for p, _, s, e in sched], [("env", 0, 20), ("torch", 20, 140)])
        text = dc.plan_text(*self.plan("--rerun-failed=" + tsv, "--parts=torch")[:3])
        self.assertIn("pytorch bf16 B=16 ckpt=off", text)
        self.assertNotIn("pytorch fp16 B=16", text.split("total")[0].split("torch:")[0])

    def test_bad_part_names_are_refused(self):
        with self.assertRaises(SystemExit):
            dc.parse_args(["--parts=tests"])
        args = dc.parse_args(["--part_budget=gpu=3"])
        with self.assertRaises(SystemExit):
            dc.part_budgets(args)


class RerunTest(unittest.TestCase):
    def test_last_row_wins(self):
        rows = [dict(part="test", name="a", status="STARTED"),
                dict(part="test", name="b", status="STARTED"),
                dict(part="test", name="a", status="PASS")]
        last = dc.last_rows(rows)
        self.assertEqual(last[("test", "a")]["status"], "PASS")
        self.assertEqual(last[("test", "b")]["status"], "STARTED")

    def test_cut_rows_run_again(self):
        self.assertNotIn(dc.CUT, dc.DONE)
        self.assertNotIn(dc.CUT, dc.BAD)


class StatusTest(unittest.TestCase):
    def test_pytorch_rows_skipped_for_time_are_cut(self):
        self.assertEqual(dc.csv_status({"status": "skipped", "note": "time budget (torch.compile)"}),
                         dc.CUT)
        self.assertEqual(dc.csv_status({"status": "skipped", "note": "torch has no CUDA device"}),
                         "SKIPPED")
        self.assertEqual(dc.csv_status({"status": "ok", "note": ""}), "PASS")
        self.assertEqual(dc.csv_status({"status": "error", "note": "x"}), "FAIL")

    def test_measured_lines_reach_the_results(self):
        out = ("[ RUN      ] A.B\nmeasured: B SCALED_GEMM max |D - ref| / sum|a*b| = 3.10e-05 "
               "(fast accumulation off), - (on); 1% of the bound\n[       OK ] A.B\n")
        self.assertEqual(dc.measured_lines(out),
                         ["B SCALED_GEMM max |D - ref| / sum|a*b| = 3.10e-05 (fast accumulation "
                          "off), - (on); 1% of the bound"])


def row(fw, prec, ckpt, tps, ms, mfu, gemm, peak, batch="16", status="ok", note=""):
    return dict(framework=fw, precision=prec, batch=batch, seq="1024", ckpt=ckpt, status=status,
                tokens_per_s=str(tps), ms_per_step=str(ms), mfu_measured=str(mfu),
                mfu_datasheet="", gemm_tflops=str(gemm), datasheet_tflops="", peak_mib=str(peak),
                note=note)


class GoalsTest(unittest.TestCase):
    def rows(self):
        # Fixed figures chosen so every goal passes: 1.2x PyTorch, 61% MFU,
        # fp16 0.98x bf16, tf32 3.5x fp32, 0.8x memory, +25% for checkpointing.
        return [row("mantissa", "bf16", "off", 240000, 68.27, 0.61, 780, 40000),
                row("mantissa", "bf16", "on", 192000, 85.33, 0.49, 780, 20000),
                row("mantissa", "fp16", "off", 235200, 69.66, 0.60, 780, 40000),
                row("mantissa", "tf32", "off", 70000, 234.0, 0.5, 400, 50000),
                row("mantissa", "fp32", "off", 20000, 819.2, 0.9, 50, 50000),
                row("pytorch", "bf16", "off", 200000, 81.92, 0.5, 790, 50000),
                # Another batch must not be confused with B=16.
                row("pytorch", "bf16", "off", 1, 1, 0.01, 790, 1, batch="8")]

    def goal(self, lines, name):
        hits = [l for l in lines if l.startswith("| " + name)]
        self.assertEqual(len(hits), 1, lines)
        return hits[0]

    def test_all_pass_with_their_figures(self):
        lines = dc.goal_lines(self.rows())
        self.assertIn("| PASS | 1.20x (240000 vs 200000 tokens/s) |",
                      self.goal(lines, "bf16 tokens/s vs PyTorch"))
        self.assertIn("| PASS | 61.0% of the GEMM rate measured in this run (780 TFLOP/s) |",
                      self.goal(lines, "bf16 MFU"))
        self.assertIn("| PASS | fp16 0.980x of bf16", self.goal(lines, "fp16"))
        self.assertIn("| PASS | 3.50x (70000 vs 20000 tokens/s) |", self.goal(lines, "tf32"))
        self.assertIn("| PASS | 0.80x (40000 vs 50000 MiB) |", self.goal(lines, "bf16 peak memory"))
        self.assertIn("| PASS | +25.0% step time (85.3 vs 68.3 ms) |",
                      self.goal(lines, "gradient checkpointing"))
        self.assertEqual(lines[-1], "Goals: 6 PASS.")

    def test_each_threshold_fails_just_past_it(self):
        rows = self.rows()
        rows[0]["tokens_per_s"] = "219000"   # 1.095x PyTorch; fp16 now 1.07x of it
        rows[0]["mfu_measured"] = "0.599"
        rows[2]["tokens_per_s"] = "212000"   # 0.968x of 219000
        rows[3]["tokens_per_s"] = "59900"    # 2.995x fp32
        rows[0]["peak_mib"] = "45001"        # 0.90002x
        rows[1]["ms_per_step"] = str(68.27 * 1.301)
        rows[0]["ms_per_step"] = "68.27"
        lines = dc.goal_lines(rows)
        for name in ("bf16 tokens/s vs PyTorch", "bf16 MFU", "fp16", "tf32", "bf16 peak memory",
                     "gradient checkpointing"):
            self.assertIn("| FAIL | ", self.goal(lines, name))
        self.assertEqual(lines[-1], "Goals: 6 FAIL.")

    def test_missing_or_failed_rows_are_not_run_with_the_reason(self):
        rows = [r for r in self.rows() if r["framework"] != "pytorch"]
        rows[4] = row("mantissa", "fp32", "off", "", "", "", "", "", status="timeout",
                      note="killed after 45 s")
        rows[1]["ms_per_step"] = "nan"
        lines = dc.goal_lines(rows)
        self.assertIn("| NOT-RUN | pytorch bf16 B=16 ckpt=off no row |",
                      self.goal(lines, "bf16 tokens/s vs PyTorch"))
        self.assertIn("| NOT-RUN | mantissa fp32 B=16 ckpt=off timeout: killed after 45 s |",
                      self.goal(lines, "tf32"))
        self.assertIn("| PASS |", self.goal(lines, "bf16 MFU"))
        # A NaN figure never passes.
        self.assertNotIn("| PASS |", self.goal(lines, "gradient checkpointing"))
        self.assertEqual(lines[-1], "Goals: 2 PASS, 1 FAIL, 3 NOT-RUN.")


if __name__ == "__main__":
    unittest.main()
