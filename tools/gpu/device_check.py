#!/usr/bin/env python3
"""The device check: one command, run from an unpacked device bundle on a GPU
machine (device_bundle/run.sh RESULTS_DIR calls this), that runs, each part
under its own time limit and the whole within --budget seconds:

  tests   every GPU test binary (4 at a time);
  train   `train --device=cuda` for mlp, cnn and gpt2 (124M, T=256) in fp32,
          tf32, bf16 and fp16 (3 at a time);
  bench   //tools/benchmarks:gpt2_benchmark: GPT-2 124M, B=8 and 16, T=1024,
          fp32/tf32/bf16/fp16, gradient checkpointing off and on; tokens/s,
          ms/step, MFU against the GEMM rate measured in the same run and the
          datasheet dense peak, peak memory (one process per precision and
          checkpointing setting);
  torch   tools/benchmarks/gpt2_torch_bench.py on the same shapes and the same
          token shard. Its torch.compile work overlaps the untimed parts
          (tests, train): it compiles and warms every configuration in the
          background, stops when the Mantissa benchmark starts, and times its
          rows after it (two-phase protocol, see that script);
  cuda_benchmark  //plugins/backends/cuda:cuda_benchmark, if time is left.

A part that overruns is killed and reported as TIMEOUT; parts that need a GPU
report SKIPPED without one, the torch part without torch or without CUDA.
Results (8 files at most, flat): summary.md (every table, the Mantissa/PyTorch
ratios), environment.txt (which CUDA libraries were used, versions,
nvidia-smi), gpu_tests.log, train.log, bench_mantissa.log, bench_torch.log,
bench.csv, cuda_benchmark.log. The summary is also printed last.

CUDA libraries: the bundle's lib/ first (cudart and every non-CUDA library
the binaries need), then, for each of libcublasLt.so.13, libcublas.so.13,
libcudnn.so.9 (optional) and libnvrtc.so.13 (optional), the first directory
holding it among $CUDA_HOME/$CUDA_PATH lib64, /usr/local/cuda*/lib64 and
targets/x86_64-linux/lib (CUDA 13 sonames only, so another major's toolkit is
passed over) and the running python3's site-packages/nvidia/*/lib, then every
directory found by searching /opt, /usr/local, /root, /home, /workspace and
/usr/lib (hidden directories, so venvs such as
/opt/torch/.venv/.../site-packages/nvidia/*/lib, included; bounded depth and
time). `--print-env` prints the resulting `export` lines
(device_bundle/env.sh evals them).

Standard library only; Python 3.8+.
"""
import argparse
import concurrent.futures
import ctypes
import csv
import glob
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLE = os.path.dirname(HERE)  # <bundle>/scripts/device_check.py

REQUIRED = ["libcublasLt.so.13", "libcublas.so.13"]
OPTIONAL = ["libcudnn.so.9", "libnvrtc.so.13"]
SEARCH_ROOTS = ["/opt", "/usr/local", "/root", "/home", "/workspace", "/usr/lib"]
SEARCH_DEPTH = 10
SEARCH_SECONDS = 20.0
PRUNE = {"proc", "sys", "dev", ".git", "node_modules", "__pycache__", "bazel-disk", "_bazel_root",
         "bazel-out", ".cache"}

# Dense (no sparsity) datasheet peaks in TFLOP/s, H100/H200 SXM: FP32 67,
# TF32 tensor core 989 with sparsity = 494.7 dense, BF16/FP16 1979 with
# sparsity = 989.4 dense.
DATASHEET = {
    "H200": "fp32=67,tf32=494.7,bf16=989.4,fp16=989.4",
    "H100 80GB HBM3": "fp32=67,tf32=494.7,bf16=989.4,fp16=989.4",
}

PRECISIONS = ["bf16", "fp16", "tf32", "fp32"]
STDBUF = shutil.which("stdbuf")

CSV_HEADER = ["framework", "precision", "batch", "seq", "ckpt", "status", "tokens_per_s",
              "ms_per_step", "mfu_measured", "mfu_datasheet", "gemm_tflops",
              "datasheet_tflops", "peak_mib", "note"]


# ---------------------------------------------------------------- discovery

def toolkit_dirs():
    dirs = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs += [os.path.join(os.environ[var], "lib64"),
                     os.path.join(os.environ[var], "targets/x86_64-linux/lib")]
    for root in ["/usr/local/cuda"] + sorted(glob.glob("/usr/local/cuda-13*"), reverse=True):
        dirs += [os.path.join(root, "lib64"), os.path.join(root, "targets/x86_64-linux/lib")]
    return dirs


def python_lib_dirs():
    """site-packages/nvidia/*/lib of this interpreter (on a PyTorch image the
    python3 that runs this script is PyTorch's): no search needed."""
    dirs = []
    for sp in sys.path:
        if sp.endswith("-packages"):
            dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")))
    return dirs


def search(names, roots=SEARCH_ROOTS, depth=SEARCH_DEPTH, seconds=SEARCH_SECONDS):
    """{name: [dirs holding it]} by walking `roots` (hidden directories too),
    at most `depth` levels and `seconds` seconds; plus whether it was cut."""
    found = {n: [] for n in names}
    deadline = time.time() + seconds
    cut = False
    for root in roots:
        if not os.path.isdir(root):
            continue
        base = root.rstrip("/").count("/")
        for d, subdirs, files in os.walk(root, followlinks=False):
            if time.time() > deadline:
                cut = True
                break
            level = d.count("/") - base
            subdirs[:] = sorted(s for s in subdirs if s not in PRUNE) if level < depth else []
            for n in names:
                if n in files and os.path.exists(os.path.join(d, n)) and d not in found[n]:
                    found[n].append(d)
    return found, cut


def discover(lines, roots=SEARCH_ROOTS):
    """The LD_LIBRARY_PATH directories (bundle's lib first) and {soname: path}."""
    chosen = {}
    for name in REQUIRED + OPTIONAL:
        for d in [os.path.join(BUNDLE, "lib")] + toolkit_dirs() + python_lib_dirs():
            if os.path.exists(os.path.join(d, name)):
                chosen[name] = d
                break
    missing = [n for n in REQUIRED + OPTIONAL if n not in chosen]
    if missing:
        t = time.time()
        found, cut = search(missing, roots)
        lines.append(f"searched {', '.join(roots)} (depth {SEARCH_DEPTH}) for "
                     f"{', '.join(missing)} in {time.time() - t:.1f} s"
                     f"{' (cut at the time limit)' if cut else ''}")
        for n in missing:
            # Prefer the directory that also holds the other CUDA libraries
            # already chosen (one consistent install), else the first found.
            dirs = found[n]
            same = [d for d in dirs if d in chosen.values()]
            if dirs:
                chosen[n] = (same or dirs)[0]
            if len(dirs) > 1:
                lines.append(f"  {n}: also in {', '.join(d for d in dirs if d != chosen[n])}")
    dirs = [os.path.join(BUNDLE, "lib")]
    for n in REQUIRED + OPTIONAL:
        if n in chosen and chosen[n] not in dirs:
            dirs.append(chosen[n])
    for n in REQUIRED + OPTIONAL:
        if n in chosen:
            path = os.path.join(chosen[n], n)
            lines.append(f"{n}: {path} -> {os.path.realpath(path)}")
        else:
            lines.append(f"{n}: NOT FOUND{'' if n in OPTIONAL else ' (required)'}")
    return dirs, {n: os.path.join(d, n) for n, d in chosen.items()}


def library_versions(paths):
    """Versions read through the libraries' own calls (ctypes)."""
    out = []
    def call(path, fn, restype=ctypes.c_size_t):
        lib = ctypes.CDLL(path)
        f = getattr(lib, fn)
        f.restype = restype
        return f()
    try:
        cudart = os.path.join(BUNDLE, "lib", "libcudart.so.13")
        if os.path.exists(cudart):
            lib = ctypes.CDLL(cudart)
            v = ctypes.c_int(0)
            lib.cudaRuntimeGetVersion(ctypes.byref(v))
            out.append(f"CUDA runtime (bundled cudart): {v.value // 1000}.{v.value % 1000 // 10}")
            d = ctypes.c_int(0)
            if lib.cudaDriverGetVersion(ctypes.byref(d)) == 0 and d.value:
                out.append(f"CUDA driver API: {d.value // 1000}.{d.value % 1000 // 10}")
    except OSError as e:
        out.append(f"cudart: {e}")
    for name, fn in (("libcublasLt.so.13", "cublasLtGetVersion"), ("libcudnn.so.9", "cudnnGetVersion")):
        if name in paths:
            try:
                v = call(paths[name], fn)
                if name.startswith("libcublasLt"):
                    out.append(f"cuBLASLt: {v // 10000}.{v % 10000 // 100}.{v % 100} ({v})")
                else:
                    out.append(f"cuDNN: {v // 10000}.{v % 10000 // 100}.{v % 100} ({v})")
            except (OSError, AttributeError) as e:
                out.append(f"{name}: {e}")
    return out


def bundle_env(ld_dirs):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(ld_dirs + ([os.environ["LD_LIBRARY_PATH"]]
                                                 if os.environ.get("LD_LIBRARY_PATH") else []))
    runfiles = os.path.join(BUNDLE, "runfiles")
    env["RUNFILES_DIR"] = runfiles
    env["TEST_SRCDIR"] = runfiles
    env["TEST_WORKSPACE"] = "mantissa"
    env["MANTISSA_DIGITS_CSV"] = os.path.join(runfiles, "sklearn_digits", "digits.csv.gz")
    return env


# ---------------------------------------------------------------- running

class Deadline:
    def __init__(self, start, seconds):
        self.start, self.seconds = start, seconds

    def left(self, at=None):
        """Seconds until `at` seconds after the start (default: the end)."""
        end = self.start + (self.seconds if at is None else min(at, self.seconds))
        return end - time.time()


def run(cmd, env, log_path, timeout, cwd=None):
    """(returncode or None on timeout, seconds, output). Kills the whole
    process group on timeout."""
    t = time.time()
    if timeout <= 1:
        return None, 0.0, "not started: no time left\n"
    if STDBUF:  # line-buffered, so a killed process's log keeps what it printed
        cmd = [STDBUF, "-oL", "-eL"] + cmd
    with open(log_path, "wb") as log:
        p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = None
    with open(log_path, "rb") as log:
        out = log.read().decode("utf-8", "replace")
    return rc, time.time() - t, out


def gtest_result(rc, out):
    passed = len(re.findall(r"^\[       OK \]", out, re.M))
    skipped = len(set(re.findall(r"^\[  SKIPPED \] (\S+)", out, re.M)))
    failed = len(set(re.findall(r"^\[  FAILED  \] (\S+\.\S+)", out, re.M)))
    if rc is None:
        result = "TIMEOUT"
    elif rc != 0:
        loader = re.search(r"error while loading shared libraries[^\n]*", out)
        result = f"FAIL (rc {rc}{': ' + loader.group(0) if loader else ''})"
    elif skipped:
        why = re.search(r"SKIPPED: ([^\n]*)", out)
        why = why.group(1) if why else "see gpu_tests.log"
        result = f"SKIPPED ({why})" if not passed else f"PASS, {skipped} skipped ({why})"
    else:
        result = "PASS"
    return result, passed, skipped, failed


def parallel(jobs, workers):
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda j: j(), jobs))


# ---------------------------------------------------------------- parts

def part_tests(ctx):
    tests = sorted(os.path.basename(p) for p in glob.glob(os.path.join(BUNDLE, "bin", "cuda_*test")))
    logs = {}

    def one(name):
        def job():
            tmp = tempfile.mkdtemp(prefix=name + ".", dir=ctx.work)
            env = dict(ctx.env, TEST_TMPDIR=tmp)
            timeout = min(ctx.args.test_timeout, ctx.deadline.left(ctx.at["tests"]))
            rc, secs, out = run([os.path.join(BUNDLE, "bin", name)], env,
                                os.path.join(ctx.work, name + ".log"), timeout)
            logs[name] = out
            result, passed, skipped, failed = gtest_result(rc, out)
            return f"| {name} | {result} | {passed} | {skipped} | {failed} | {secs:.0f} s |"
        return job

    rows = parallel([one(t) for t in tests], 4)
    with open(os.path.join(ctx.results, "gpu_tests.log"), "w") as f:
        for t in tests:
            f.write(f"==================== {t}\n{logs.get(t, '')}\n")
    ctx.failed |= any("| FAIL" in r or "| TIMEOUT" in r for r in rows)
    return (["## GPU tests", "", "| test | result | passed | skipped | failed | time |",
             "|---|---|---|---|---|---|"] + rows)


TRAIN_JOBS = {
    "mlp": ["--model=mlp", "--dataset=digits", "--steps=200", "--log_every=50"],
    "cnn": ["--model=cnn", "--model_options=depth=2,width=16", "--dataset=digits",
            "--steps=150", "--log_every=50"],
    "gpt2": ["--model=gpt2", "--model_options=preset=gpt2-124m", "--dataset=shards",
             "--seq_len=256", "--batch_size=8", "--steps=30", "--log_every=10",
             "--eval_batches=2"],
}


def part_train(ctx):
    logs = {}

    def one(model, prec):
        def job():
            args = [os.path.join(BUNDLE, "bin", "train"), "--device=cuda", f"--precision={prec}",
                    "--progress=plain", f"--cache_dir={ctx.work}/cache", "--checkpoint_dir="]
            args += TRAIN_JOBS[model]
            if model == "gpt2":
                args += [f"--train_shards={ctx.shard}", f"--val_shards={ctx.shard}"]
            timeout = min(ctx.args.train_timeout, ctx.deadline.left(ctx.at["train"]))
            rc, secs, out = run(args, ctx.env, os.path.join(ctx.work, f"train_{model}_{prec}.log"),
                                timeout)
            logs[(model, prec)] = " ".join(args) + "\n" + out
            losses = re.findall(r"^step\s+\d+/\d+\s+loss\s+([0-9.naninf]+)", out, re.M)
            ev = re.findall(r"^eval\s+step\s+\d+\s+loss\s+([0-9.]+)(?:\s+accuracy\s+([0-9.]+%))?",
                            out, re.M)
            if "no CUDA device" in out:
                result = "SKIPPED (no CUDA device)"
            elif rc is None:
                result = "TIMEOUT"
            elif rc != 0:
                err = [l for l in out.splitlines() if "error" in l.lower()]
                result = f"FAIL (rc {rc}: {err[-1][:160] if err else 'see train.log'})"
            else:
                result = "PASS"
            first = losses[0] if losses else "-"
            last = losses[-1] if losses else "-"
            evs = (f"{ev[-1][0]}" + (f", {ev[-1][1]}" if ev[-1][1] else "")) if ev else "-"
            return f"| {model} | {prec} | {result} | {first} | {last} | {evs} | {secs:.0f} s |"
        return job

    jobs = [one(m, p) for m in ("mlp", "cnn", "gpt2") for p in ("fp32", "tf32", "bf16", "fp16")]
    rows = parallel(jobs, 3)
    with open(os.path.join(ctx.results, "train.log"), "w") as f:
        for k, v in logs.items():
            f.write(f"==================== train {k[0]} {k[1]}\n{v}\n")
    ctx.failed |= any("| FAIL" in r for r in rows)
    return (["## train --device=cuda", "",
             "| model | precision | result | first loss | last loss | eval (loss, acc) | time |",
             "|---|---|---|---|---|---|---|"] + rows)


def datasheet_for(ctx):
    name = ctx.gpu_name or ""
    for key, spec in DATASHEET.items():
        if key in name:
            return spec
    return ""


def part_bench(ctx):
    log = open(os.path.join(ctx.results, "bench_mantissa.log"), "w")
    csv_path = os.path.join(ctx.results, "bench.csv")
    batches = ctx.args.batches
    ckpts = ctx.args.checkpointing.split(",")
    # 16-bit first (cuDNN attention), then tf32/fp32, whose attention runs the
    # fallback kernels (slow until they are replaced).
    wanted = [p for p in PRECISIONS if p in ctx.args.precisions.split(",")]
    groups = ([(p, c) for p in wanted if p in ("bf16", "fp16") for c in ckpts] +
              [(p, c) for c in ckpts for p in wanted if p not in ("bf16", "fp16")])
    for prec, ckpt in groups:
        before = read_csv(csv_path)
        timeout = min(ctx.args.bench_timeout, ctx.deadline.left(ctx.at["bench"]))
        args = [os.path.join(BUNDLE, "bin", "gpt2_benchmark"), "--bench_device=cuda",
                f"--bench_precisions={prec}", f"--bench_batches={batches}",
                f"--bench_checkpointing={ckpt}", "--bench_model_options=preset=gpt2-124m",
                "--bench_seq_len=1024", f"--bench_steps={ctx.args.steps}",
                f"--bench_warmup_steps={ctx.args.warmup}", "--bench_gemm_size=8192",
                f"--bench_train_shards={ctx.shard}", f"--bench_csv={csv_path}",
                "--bench_python="]
        if datasheet_for(ctx):
            args.append(f"--bench_datasheet_tflops={datasheet_for(ctx)}")
        rc, secs, out = run(args, ctx.env, os.path.join(ctx.work, f"bench_{prec}_{ckpt}.log"),
                            timeout)
        log.write(f"==================== {' '.join(args)}\n{out}\n(rc {rc}, {secs:.0f} s)\n")
        log.flush()
        have = {(r["batch"],) for r in read_csv(csv_path)[len(before):]}
        for b in batches.split(","):
            if (b,) not in have:
                if timeout <= 1:
                    status, note = "skipped", "time budget"
                elif rc is None:
                    status, note = "timeout", f"killed after {secs:.0f} s"
                else:
                    status, note = "error", f"rc {rc}; see bench_mantissa.log"
                append_csv(csv_path, ["mantissa", prec, b, 1024, ckpt, status] + [""] * 7 + [note])
    log.close()


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def append_csv(path, row):
    fresh = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if fresh:
            w.writerow(CSV_HEADER)
        w.writerow(row)


class Torch:
    """The PyTorch side: phase 1 (compile + warm) starts at once in the
    background, phase 2 (timed rows) after the Mantissa benchmark."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.dir = os.path.join(ctx.work, "torch")
        os.makedirs(self.dir, exist_ok=True)
        self.ready = os.path.join(self.dir, "ready")
        self.go = os.path.join(self.dir, "go")
        self.stop = os.path.join(self.dir, "stop_warm")
        self.csv = os.path.join(self.dir, "rows.csv")
        self.log_path = os.path.join(ctx.results, "bench_torch.log")
        script = os.path.join(HERE, "gpt2_torch_bench.py")
        ds = datasheet_for(ctx)
        self.cmd = [ctx.args.torch_python, "-u", script, "--device=cuda",
                    f"--batches={ctx.args.batches}", "--seq=1024",
                    f"--precisions={ctx.args.precisions}",
                    f"--checkpointing={ctx.args.checkpointing}", f"--steps={ctx.args.steps}",
                    f"--warmup={ctx.args.warmup}", f"--data={ctx.shard}", "--gemm_size=8192",
                    f"--csv={self.csv}", f"--ready_file={self.ready}", f"--go_file={self.go}",
                    f"--stop_warm_file={self.stop}",
                    f"--deadline={ctx.deadline.start + ctx.at['torch']:.0f}"]
        if ds:
            self.cmd.append(f"--datasheet={ds}")
        # PyTorch's own environment: none of the bundle's library paths.
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.log = open(self.log_path, "w")
        self.log.write(" ".join(self.cmd) + "\n")
        self.log.flush()
        self.proc = subprocess.Popen(self.cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True, cwd=self.dir)

    def exited(self):
        return self.proc.poll() is not None

    def pause(self, wait_until):
        """Stops phase 1 and waits (until `wait_until` seconds after the
        start) for it to reach its wait point; the GPU is then Mantissa's."""
        open(self.stop, "w").close()
        while not os.path.exists(self.ready) and not self.exited():
            if self.ctx.deadline.left(wait_until) <= 0:
                self.log.write("# device check: phase 1 still running when the Mantissa "
                               "benchmark had to start; it overlaps the first rows\n")
                self.log.flush()
                return
            time.sleep(0.5)

    def finish(self):
        open(self.go, "w").close()
        try:
            self.proc.wait(timeout=max(1.0, self.ctx.deadline.left(self.ctx.at["torch"] + 8)))
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.log.write("\n# device check: killed at the time limit\n")
        self.log.close()
        with open(self.log_path) as f:
            text = f.read()
        skipped = re.search(r"^skipped: (.*)$", text, re.M)
        rows = read_csv(self.csv)
        csv_path = os.path.join(self.ctx.results, "bench.csv")
        for r in rows:
            append_csv(csv_path, [r.get(k, "") for k in CSV_HEADER])
        have = {(r["precision"], r["batch"], r["ckpt"]) for r in rows}
        for prec in self.ctx.args.precisions.split(","):
            for b in self.ctx.args.batches.split(","):
                for c in self.ctx.args.checkpointing.split(","):
                    if (prec, b, c) not in have:
                        why = (skipped.group(1) if skipped else
                               f"no row (rc {self.proc.returncode}); see bench_torch.log")
                        status = "skipped" if skipped else "timeout" if self.proc.returncode in (
                            -9, None) else "error"
                        append_csv(csv_path, ["pytorch", prec, b, 1024, c, status] + [""] * 7 + [why])


def fmt(v, pct=False):
    if v in ("", None):
        return "-"
    x = float(v)
    return f"{100 * x:.1f}%" if pct else (f"{x:.0f}" if x >= 100 else f"{x:.2f}")


def bench_table(ctx):
    rows = read_csv(os.path.join(ctx.results, "bench.csv"))
    by = {(r["framework"], r["precision"], r["batch"], r["ckpt"]): r for r in rows}
    keys = sorted({(r["precision"], r["batch"], r["ckpt"]) for r in rows},
                  key=lambda k: (["fp32", "tf32", "bf16", "fp16"].index(k[0])
                                 if k[0] in PRECISIONS else 9, int(k[1]), k[2]))
    out = ["## GPT-2 124M training, T=1024 (Mantissa vs PyTorch)", "",
           "MFU meas = against the GEMM rate each framework measured in the same run "
           "(8192^3, that precision); MFU data = against the datasheet dense peak"
           + (f" ({datasheet_for(ctx)} TFLOP/s)" if datasheet_for(ctx) else " (unknown GPU: none)")
           + "; memory: Mantissa = backend allocator peak (all categories), PyTorch = "
           "max_memory_allocated of the configuration.", "",
           "| prec | B | ckpt | Mantissa tokens/s | ms/step | MFU meas | MFU data | GEMM TFLOP/s "
           "| peak MiB | PyTorch tokens/s | ms/step | MFU meas | MFU data | GEMM TFLOP/s | peak MiB "
           "| Mantissa/PyTorch |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for k in keys:
        cells = [k[0], k[1], k[2]]
        tps = {}
        for fw in ("mantissa", "pytorch"):
            r = by.get((fw,) + k)
            if r is None:
                cells += ["-"] * 6
            elif r["status"] != "ok":
                cells += [f"{r['status'].upper()}: {r['note']}"] + ["-"] * 5
            else:
                tps[fw] = float(r["tokens_per_s"])
                cells += [fmt(r["tokens_per_s"]), fmt(r["ms_per_step"]),
                          fmt(r["mfu_measured"], True), fmt(r["mfu_datasheet"], True),
                          fmt(r["gemm_tflops"]), fmt(r["peak_mib"])]
        cells.append(f"{tps['mantissa'] / tps['pytorch']:.2f}x"
                     if len(tps) == 2 and tps["pytorch"] > 0 else "-")
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    notes = sorted({r["note"] for r in rows if r["framework"] == "pytorch" and r["status"] == "ok"
                    and r["note"]})
    if notes:
        out += ["", "PyTorch rows: " + "; ".join(n.split(" loss")[0] for n in notes[:1]) +
                " (torch.compile with a dynamic batch dimension, SDPA, fused AdamW, autocast; "
                "GradScaler for fp16)."]
    return out


# The goals (GPT-2 124M, T=1024, B=16 on an H200), each checked
# against the rows of bench.csv: (name, threshold text, function of the rows
# giving (figure, passed) or raising KeyError when a row it needs is missing).
GOAL_BATCH = "16"


def _ok(by, fw, prec, ckpt="off", batch=GOAL_BATCH):
    r = by.get((fw, prec, batch, ckpt))
    if r is None or r["status"] != "ok":
        why = "no row" if r is None else f"{r['status']}: {r['note']}"
        raise KeyError(f"{fw} {prec} B={batch} ckpt={ckpt} {why}")
    return r


def _f(r, key):
    if r.get(key) in ("", None):
        raise KeyError(f"{r['framework']} {r['precision']} B={r['batch']} has no {key}")
    return float(r[key])


def _goal_vs_torch(by):
    m, t = _f(_ok(by, "mantissa", "bf16"), "tokens_per_s"), _f(_ok(by, "pytorch", "bf16"), "tokens_per_s")
    x = m / t
    return f"{x:.2f}x ({m:.0f} vs {t:.0f} tokens/s)", x >= 1.1


def _goal_mfu(by):
    r = _ok(by, "mantissa", "bf16")
    x = _f(r, "mfu_measured")
    return f"{100 * x:.1f}% of the GEMM rate measured in this run ({_f(r, 'gemm_tflops'):.0f} TFLOP/s)", x >= 0.6


def _goal_fp16(by):
    h, b = _f(_ok(by, "mantissa", "fp16"), "tokens_per_s"), _f(_ok(by, "mantissa", "bf16"), "tokens_per_s")
    x = h / b
    return f"fp16 {x:.3f}x of bf16 ({h:.0f} vs {b:.0f} tokens/s)", x >= 0.97


def _goal_tf32(by):
    t, f = _f(_ok(by, "mantissa", "tf32"), "tokens_per_s"), _f(_ok(by, "mantissa", "fp32"), "tokens_per_s")
    x = t / f
    return f"{x:.2f}x ({t:.0f} vs {f:.0f} tokens/s)", x >= 3.0


def _goal_memory(by):
    m, t = _f(_ok(by, "mantissa", "bf16"), "peak_mib"), _f(_ok(by, "pytorch", "bf16"), "peak_mib")
    x = m / t
    return f"{x:.2f}x ({m:.0f} vs {t:.0f} MiB)", x <= 0.9


def _goal_checkpointing(by):
    on = _f(_ok(by, "mantissa", "bf16", "on"), "ms_per_step")
    off = _f(_ok(by, "mantissa", "bf16", "off"), "ms_per_step")
    x = on / off - 1
    return f"+{100 * x:.1f}% step time ({on:.1f} vs {off:.1f} ms)", x <= 0.3


GOALS = [
    ("bf16 tokens/s vs PyTorch (torch.compile + SDPA + fused AdamW)", ">= 1.1x", _goal_vs_torch),
    ("bf16 MFU vs the measured GEMM rate", ">= 60%", _goal_mfu),
    ("fp16 (dynamic scaling) vs bf16 tokens/s", "within 3% (>= 0.97x)", _goal_fp16),
    ("tf32 vs fp32 tokens/s", ">= 3x", _goal_tf32),
    ("bf16 peak memory vs PyTorch, same batch", "<= 0.9x", _goal_memory),
    ("gradient checkpointing cost (bf16)", "<= 30% of step time", _goal_checkpointing),
]


def goal_lines(rows):
    """The goals as a table, one line each: PASS/FAIL with the figure, or
    NOT-RUN with the missing row. Counts of each at the end."""
    by = {(r["framework"], r["precision"], r["batch"], r["ckpt"]): r for r in rows}
    out = [f"## Goals (GPT-2 124M, B={GOAL_BATCH}, T=1024; issue 15)", "",
           "| goal | target | result | figure |", "|---|---|---|---|"]
    counts = {"PASS": 0, "FAIL": 0, "NOT-RUN": 0}
    for name, target, fn in GOALS:
        try:
            figure, passed = fn(by)
            result = "PASS" if passed else "FAIL"
        except (KeyError, ValueError, ZeroDivisionError) as e:
            figure, result = str(e).strip("'\""), "NOT-RUN"
        counts[result] += 1
        out.append(f"| {name} | {target} | {result} | {figure} |")
    # Only the non-zero counts: a run without a GPU says "6 NOT-RUN" and no
    # word its test would read as a failure.
    out += ["", "Goals: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v) + "."]
    return out


def part_cuda_benchmark(ctx):
    timeout = ctx.deadline.left() - 10
    frag = os.path.join(ctx.work, "performance_fragment.md")
    if timeout < 20:
        return ["## cuda_benchmark", "", "SKIPPED (time budget)"]
    rc, secs, out = run([os.path.join(BUNDLE, "bin", "cuda_benchmark"), f"--append={frag}"],
                        ctx.env, os.path.join(ctx.results, "cuda_benchmark.log"), timeout)
    if "no CUDA device" in out:
        result = "SKIPPED (no CUDA device)"
    elif rc is None:
        result = f"TIMEOUT after {secs:.0f} s"
    else:
        result = "PASS" if rc == 0 else f"FAIL (rc {rc})"
    lines = ["## cuda_benchmark (GEMM per precision, bandwidth, MLP step, attention)", "",
             f"{result}, {secs:.0f} s"]
    if os.path.exists(frag):
        with open(frag) as f:
            lines += ["", f.read().rstrip()]
    return lines


# ---------------------------------------------------------------- main

class Ctx:
    pass


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", default=os.path.join(BUNDLE, "results"))
    p.add_argument("--parts", default="tests,train,bench,torch,cuda_benchmark")
    p.add_argument("--budget", type=float, default=470.0,
                   help="seconds for everything, library discovery included")
    p.add_argument("--precisions", default="fp32,tf32,bf16,fp16")
    p.add_argument("--batches", default="8,16")
    p.add_argument("--checkpointing", default="off,on")
    p.add_argument("--steps", type=int, default=5, help="timed benchmark steps per row")
    p.add_argument("--warmup", type=int, default=2, help="benchmark warm-up steps per row")
    p.add_argument("--test_timeout", type=float, default=90)
    p.add_argument("--train_timeout", type=float, default=45)
    p.add_argument("--bench_timeout", type=float, default=45)
    p.add_argument("--torch_python", default=sys.executable)
    p.add_argument("--print-env", action="store_true", dest="print_env")
    args = p.parse_args(argv)

    t0 = time.time()
    lines = []
    ld_dirs, libs = discover(lines)
    if args.print_env:
        env = bundle_env(ld_dirs)
        for k in ("LD_LIBRARY_PATH", "RUNFILES_DIR", "TEST_SRCDIR", "TEST_WORKSPACE",
                  "MANTISSA_DIGITS_CSV"):
            print(f"export {k}='{env[k]}'")
        for l in lines:
            print(f"echo 'env.sh: {l}' >&2")
        return 0

    # A copy that lost its mode bits (e.g. carried between machines) still runs.
    for f in glob.glob(os.path.join(BUNDLE, "bin", "*")):
        if not os.access(f, os.X_OK):
            os.chmod(f, 0o755)
    ctx = Ctx()
    ctx.args = args
    ctx.failed = False
    parts = set(args.parts.split(","))
    ctx.deadline = Deadline(t0, args.budget)
    # Part ends, in seconds after the start, for the default 470 s budget
    # (scaled for another): tests 150, train 225, PyTorch phase 1 stopped by
    # 265, Mantissa benchmark 360, PyTorch timed rows 430, then
    # cuda_benchmark in what is left.
    scale = args.budget / 470.0
    ctx.at = {k: v * scale for k, v in
              {"tests": 150, "train": 225, "torch_pause": 265, "bench": 360,
               "torch": 430}.items()}
    os.makedirs(args.results, exist_ok=True)
    ctx.results = args.results
    ctx.work = tempfile.mkdtemp(prefix="mantissa_device_check.")
    ctx.env = bundle_env(ld_dirs)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                          "--format=csv,noheader"], capture_output=True, text=True) \
        if shutil.which("nvidia-smi") else None
    ctx.gpu_name = smi.stdout.strip().split(",")[0] if smi and smi.returncode == 0 else ""
    env_lines = ["# Device check environment", "", f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
                 f"bundle: {BUNDLE}", f"GPU: {smi.stdout.strip() if smi and smi.returncode == 0 else 'none (nvidia-smi: ' + ('not found' if smi is None else smi.stderr.strip()[:200]) + ')'}",
                 "", "CUDA libraries used:"] + ["  " + l for l in lines]
    env_lines += ["", "versions:"] + ["  " + v for v in library_versions(libs)]
    env_lines += ["", f"LD_LIBRARY_PATH={ctx.env['LD_LIBRARY_PATH']}",
                  f"RUNFILES_DIR={ctx.env['RUNFILES_DIR']}"]
    manifest = os.path.join(BUNDLE, "MANIFEST")
    if os.path.exists(manifest):
        with open(manifest) as f:
            env_lines += ["", "bundle manifest:", f.read().rstrip()]
    if shutil.which("nvidia-smi"):
        full = subprocess.run(["nvidia-smi"], capture_output=True, text=True)
        env_lines += ["", full.stdout.rstrip()]
    with open(os.path.join(args.results, "environment.txt"), "w") as f:
        f.write("\n".join(env_lines) + "\n")
    print("\n".join(env_lines[:12 + len(lines)]), flush=True)
    missing = [n for n in REQUIRED if n not in libs]

    ctx.shard = os.path.join(ctx.work, "tokens.bin")
    subprocess.run([sys.executable, os.path.join(HERE, "make_token_shard.py"), ctx.shard],
                   check=True)

    torch = Torch(ctx) if "torch" in parts else None
    summary = ["# Mantissa device check", "",
               f"GPU: {ctx.gpu_name or 'none'}; budget {args.budget:.0f} s; "
               f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; CUDA libraries: see environment.txt"]
    if missing:
        summary += ["", f"**Missing required CUDA libraries: {', '.join(missing)}** "
                        "(the cuda backend cannot load)"]

    timeline = []

    def stamp(name):
        timeline.append(f"{name} {time.time() - t0:.0f} s")
        print(f"device check: {name} done at {time.time() - t0:.0f} s", flush=True)

    if "tests" in parts:
        summary += [""] + part_tests(ctx)
        stamp("tests")
    if "train" in parts:
        summary += [""] + part_train(ctx)
        stamp("train")
    if torch is not None:
        torch.pause(ctx.at["torch_pause"])
        stamp("torch phase 1")
    if "bench" in parts:
        part_bench(ctx)
        stamp("Mantissa benchmark")
    if torch is not None:
        torch.finish()
        stamp("PyTorch benchmark")
    if "cuda_benchmark" in parts:
        summary += [""] + part_cuda_benchmark(ctx)
        stamp("cuda_benchmark")
    # The benchmark table last: the part of the printed summary a device
    # tool's output tail keeps.
    if "bench" in parts or torch is not None:
        summary += [""] + bench_table(ctx)
        summary += [""] + goal_lines(read_csv(os.path.join(ctx.results, "bench.csv")))
    summary += ["", "Parts done at: " + ", ".join(timeline) + ".",
                f"Total {time.time() - t0:.0f} s (budget {args.budget:.0f} s). "
                "Logs: gpu_tests.log, train.log, bench_mantissa.log, bench_torch.log, "
                "bench.csv, cuda_benchmark.log, environment.txt."]
    text = "\n".join(summary) + "\n"
    with open(os.path.join(args.results, "summary.md"), "w") as f:
        f.write(text)
    shutil.rmtree(ctx.work, ignore_errors=True)
    print("\n" + text, flush=True)
    return 1 if ctx.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
