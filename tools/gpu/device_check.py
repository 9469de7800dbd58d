#!/usr/bin/env python3
"""The device check: run from an unpacked device bundle on a GPU machine
(device_bundle/run.sh RESULTS_DIR [options] calls this), in two stages that
each fit a few minutes of a lent H200:

  stage 1 (--stage1_budget, 240 s): the environment and the CUDA libraries
          (NVRTC required where cuDNN is used), every GPU test binary and the
          cuda backend's conformance run (4 at a time), one short `train
          --device=cuda` per model x precision (fp32, tf32, bf16, fp16; and
          GPT-2 124M in fp8, the last item of the pass, so the first a cut
          loses), then compute-sanitizer memcheck over the small GPU tests
          (a line saying why where it cannot run);
  stage 2 (--stage2_budget, 240 s): GPT-2 124M training throughput at
          T=1024 (//tools/benchmarks:gpt2_benchmark, one process per row;
          fp8 the last of Mantissa's rows, so the first a cut loses),
          then PyTorch on the same shapes and token shard
          (tools/benchmarks/gpt2_torch_bench.py: torch.compile, SDPA, fused
          AdamW; its compile starts only now, never beside the GPU tests),
          then cuda_benchmark if time is left.

`--stage=1|2|all` picks the stages; `--rerun-failed=RESULTS_TSV` runs only
what an earlier run's results.tsv did not record as passed or skipped
(failed, timed out, never started, or running when that run was cut), and
copies the rest of that file's rows in, so the new summary is whole.

Everything lands in the results folder the moment it exists, flushed, so a
run killed by the device tool's time limit still returns what it did (the
tool returns at most 8 files, flat):
  environment.txt  libraries chosen and why, versions, nvidia-smi (first);
  results.tsv      one row per item as it starts (STARTED) and ends
                   (PASS, FAIL, TIMEOUT, SKIPPED, NOT-RUN) with its seconds
                   and a one-line reason: the input of --rerun-failed;
  stage1.log, stage2.log  every process's output, line by line as printed,
                   each line prefixed with the item's name;
  bench.csv        the benchmark rows (Mantissa's and PyTorch's);
  summary.md       rewritten after every row: counts, a table per part, the
                   slow paths the backend announced, the benchmark table and
                   the goals; printed last.
Exit status 1 when anything failed or timed out.

A GPU that is there but unusable is a failure, not a skip: where
nvidia-smi or /dev/nvidia* shows a GPU, the tests run with
MANTISSA_EXPECT_GPU=1 (their skip becomes a failure that prints the driver
and runtime versions), and any "no CUDA device" skip is reported as FAIL.

CUDA libraries: the bundle's lib/ first (cudart and every non-CUDA library
the binaries need; the binaries find it through their own RPATH), then, for
each of libcublasLt.so.13, libcublas.so.13, libcudnn.so.9 (optional),
libnvrtc.so.13 (required when libcudnn is found: cuDNN's attention kernels
are compiled at run time) and libnccl.so.2 (optional: the cuda backend
dlopen()s it for its collectives; where it is found the tests run with
MANTISSA_REQUIRE_NCCL=1, so cuda_collectives_test fails instead of
skipping when it cannot load it), the first directory holding it among
$CUDA_HOME/$CUDA_PATH lib64, /usr/local/cuda*/lib64 and
targets/x86_64-linux/lib (CUDA 13 sonames only) and the running python3's
site-packages/nvidia/*/lib, then a bounded search of /opt, /usr/local,
/root, /home, /workspace and /usr/lib (hidden directories included).
`--print-env` prints the resulting `export` lines (env.sh evals them).

Standard library only; Python 3.8+.
"""
import argparse
import concurrent.futures
import csv
import ctypes
import glob
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
OPTIONAL = ["libcudnn.so.9", "libnvrtc.so.13", "libnccl.so.2"]
SEARCH_ROOTS = ["/opt", "/usr/local", "/root", "/home", "/workspace", "/usr/lib"]
SEARCH_DEPTH = 10
SEARCH_SECONDS = 20.0
PRUNE = {"proc", "sys", "dev", ".git", "node_modules", "__pycache__", "bazel-disk", "_bazel_root",
         "bazel-out", ".cache"}

# Dense (no sparsity) datasheet peaks in TFLOP/s, H100/H200 SXM: FP32 67,
# TF32 tensor core 989 with sparsity = 494.7 dense, BF16/FP16 1979 with
# sparsity = 989.4 dense, FP8 3958 with sparsity = 1979 dense.
DATASHEET = {
    "H200": "fp32=67,tf32=494.7,bf16=989.4,fp16=989.4,fp8=1979",
    "H100 80GB HBM3": "fp32=67,tf32=494.7,bf16=989.4,fp16=989.4,fp8=1979",
}

# Every precision the check knows, in table order.
PRECISIONS = ["fp32", "tf32", "bf16", "fp16", "fp8"]
# Trained by every model in stage 1.
TRAIN_PRECISIONS = ["fp32", "tf32", "bf16", "fp16"]
# fp8 (bf16 storage, FP8 GEMMs under delayed scaling; sm_89+) is trained by
# these models only, after everything else in the pass: device time is
# scarce, and the newest path is the one a cut loses first.
FP8_TRAIN_MODELS = ["gpt2"]

CSV_HEADER = ["framework", "precision", "batch", "seq", "ckpt", "status", "tokens_per_s",
              "ms_per_step", "mfu_measured", "mfu_datasheet", "gemm_tflops",
              "datasheet_tflops", "peak_mib", "note"]
TSV_HEADER = ["time_s", "stage", "part", "name", "status", "seconds", "detail"]
DONE = {"PASS", "SKIPPED"}  # what --rerun-failed does not run again
BAD = {"FAIL", "TIMEOUT"}   # what makes the exit status 1

# Small GPU tests memcheck runs over (each well under a second of GPU work
# natively; compute-sanitizer slows them 10-100x).
SANITIZED_TESTS = ["cuda_api_test", "cuda_kernels_test", "cuda_gemm_test", "cuda_fused_test",
                   "cuda_attention_gemm_test",
                   "cuda_layers_test", "cuda_loss_scaling_test", "cuda_fused_ops_test",
                   "cuda_hotpath_test", "cuda_stochastic_rounding_test"]

TRAIN_JOBS = {
    "mlp": ["--model=mlp", "--dataset=digits", "--steps=100", "--log_every=50"],
    "cnn": ["--model=cnn", "--model_options=depth=2,width=16", "--dataset=digits",
            "--steps=60", "--log_every=30"],
    "gpt2": ["--model=gpt2", "--model_options=preset=gpt2-124m", "--dataset=shards",
             "--seq_len=256", "--batch_size=8", "--steps=12", "--log_every=4",
             "--eval_batches=2"],
}


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


def library_problems(libs):
    """Why the libraries found cannot run everything: a required one
    missing, or cuDNN without NVRTC (its Hopper attention kernels are
    compiled at run time; without NVRTC attention would fall back)."""
    out = [f"{n} not found (required)" for n in REQUIRED if n not in libs]
    if "libcudnn.so.9" in libs and "libnvrtc.so.13" not in libs:
        out.append("libcudnn.so.9 found but not libnvrtc.so.13, which cuDNN needs for its "
                   "run-time compiled attention kernels")
    return out


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
                label = "cuBLASLt" if name.startswith("libcublasLt") else "cuDNN"
                out.append(f"{label}: {v // 10000}.{v % 10000 // 100}.{v % 100} ({v})")
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


def visible_gpu():
    """What shows a GPU on this machine ('' if nothing): nvidia-smi's list
    or NVIDIA device nodes."""
    if shutil.which("nvidia-smi"):
        try:
            smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
            if smi.returncode == 0 and "GPU" in smi.stdout:
                return smi.stdout.strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired):
            pass
    nodes = sorted(glob.glob("/dev/nvidia[0-9]*"))
    return f"{nodes[0]} exists" if nodes else ""


def find_sanitizer():
    for cand in [shutil.which("compute-sanitizer"), "/usr/local/cuda/bin/compute-sanitizer",
                 *sorted(glob.glob("/usr/local/cuda*/bin/compute-sanitizer"), reverse=True),
                 *sorted(glob.glob("/opt/nvidia/*/compute-sanitizer/compute-sanitizer")),
                 *sorted(glob.glob("/opt/**/compute-sanitizer", recursive=False))]:
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return ""


# ---------------------------------------------------------------- results

def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def last_rows(rows):
    """The last row of each (stage, part, name), in first-seen order."""
    out = {}
    for r in rows:
        out[(r["stage"], r["part"], r["name"])] = r
    return out


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
        f.flush()
        os.fsync(f.fileno())


class Results:
    """The results folder, written as things happen: rows of results.tsv
    (flushed and synced), the stage logs line by line, and summary.md
    rewritten (through a temporary file and a rename) after every row."""

    def __init__(self, folder, t0, header_lines):
        self.folder = folder
        self.t0 = t0
        self.header_lines = header_lines
        self.lock = threading.RLock()
        self.logs = {}
        self.tsv_path = os.path.join(folder, "results.tsv")
        self.bench_csv = os.path.join(folder, "bench.csv")
        self.said = []  # slow paths the backend announced
        self.rows = []  # what results.tsv holds, as dicts (the summary reads these)
        os.makedirs(folder, exist_ok=True)
        fresh = not os.path.exists(self.tsv_path)
        self.tsv = open(self.tsv_path, "a", newline="")
        if fresh:
            self._write_tsv(TSV_HEADER)

    def _write_tsv(self, fields):
        self.tsv.write("\t".join(fields) + "\n")
        self.tsv.flush()
        os.fsync(self.tsv.fileno())

    def row(self, stage, part, name, status, seconds=0.0, detail="", at=None):
        with self.lock:
            at = time.time() - self.t0 if at is None else at
            fields = [str(f).replace("\t", " ").replace("\n", " ") for f in
                      (f"{at:.0f}", stage, part, name, status, f"{seconds:.0f}", detail)]
            self._write_tsv(fields)
            self.rows.append(dict(zip(TSV_HEADER, fields)))
            self.write_summary()

    def log(self, stage, name, line):
        with self.lock:
            f = self.logs.get(stage)
            if f is None:
                f = self.logs[stage] = open(os.path.join(self.folder, f"stage{stage}.log"), "a")
            f.write(f"[{name}] {line}" if line.endswith("\n") else f"[{name}] {line}\n")
            f.flush()
            if line.startswith("mantissa: cuda backend:") and line.strip() not in self.said:
                self.said.append(line.strip())

    def write_summary(self, extra=None):
        with self.lock:
            text = "\n".join(summary_lines(self, extra)) + "\n"
            tmp = os.path.join(self.folder, ".summary.md.tmp")
            with open(tmp, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, os.path.join(self.folder, "summary.md"))
            return text

    def close(self):
        with self.lock:
            for f in self.logs.values():
                f.close()
            self.tsv.close()


# ---------------------------------------------------------------- running

def run_streamed(cmd, env, timeout, results, stage, name, cwd=None):
    """Runs cmd, copying each output line into the stage log as it comes.
    (returncode or None on timeout, seconds, output). Kills the process
    group on timeout."""
    t = time.time()
    results.log(stage, name, "$ " + " ".join(cmd))
    try:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             cwd=cwd, start_new_session=True)
    except OSError as e:
        results.log(stage, name, f"cannot start: {e}")
        return 127, time.time() - t, f"cannot start: {e}\n"
    chunks = []

    def pump():
        for raw in iter(p.stdout.readline, b""):
            line = raw.decode("utf-8", "replace")
            chunks.append(line)
            results.log(stage, name, line)
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc = p.wait(timeout=max(timeout, 0.1))
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        rc = None
        results.log(stage, name, f"killed at its time limit ({timeout:.0f} s)")
    reader.join(timeout=5)
    return rc, time.time() - t, "".join(chunks)


class Item:
    """One thing the check runs: a command and a function reading its
    (rc, output) into (status, detail)."""

    def __init__(self, stage, part, name, cmd, timeout, classify, env=None, cwd=None):
        self.stage, self.part, self.name = stage, part, name
        self.cmd, self.timeout, self.classify = cmd, timeout, classify
        self.env, self.cwd = env, cwd


def run_items(items, workers, deadline, results, ctx):
    """Runs items, `workers` at a time, none started within 5 s of
    `deadline` (those are NOT-RUN); each under min(its timeout, time left)."""
    lock = threading.Lock()
    queue = list(items)

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                item = queue.pop(0)
            left = deadline - time.time()
            if left < 5:
                results.row(item.stage, item.part, item.name, "NOT-RUN", 0,
                            f"no time left in stage {item.stage}")
                continue
            results.row(item.stage, item.part, item.name, "STARTED")
            env = dict(ctx.env, **(item.env or {}))
            rc, secs, out = run_streamed(item.cmd, env, min(item.timeout, left), results,
                                         item.stage, item.name, cwd=item.cwd)
            if rc is None:
                status, detail = "TIMEOUT", f"killed after {secs:.0f} s"
            elif out.startswith("cannot start"):
                status, detail = "FAIL", out.strip()[:200]
            else:
                status, detail = item.classify(rc, out)
            results.row(item.stage, item.part, item.name, status, secs, detail)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# ---------------------------------------------------------- classifiers

def first_line(out, pattern):
    m = re.search(pattern, out, re.M)
    return m.group(0).strip()[:200] if m else ""


def gtest_classifier(gpu):
    def classify(rc, out):
        passed = len(re.findall(r"^\[       OK \]", out, re.M))
        skipped = len(set(re.findall(r"^\[  SKIPPED \] (\S+)", out, re.M)))
        failed = sorted(set(re.findall(r"^\[  FAILED  \] (\S+\.\S+)", out, re.M)))
        counts = f"{passed} passed, {skipped} skipped, {len(failed)} failed"
        if rc != 0:
            loader = first_line(out, r"error while loading shared libraries.*$")
            why = loader or (", ".join(failed[:3]) if failed else first_line(out, r"^.*(error|Error|abort).*$"))
            return "FAIL", f"rc {rc}; {counts}{': ' + why if why else ''}"
        no_device = first_line(out, r"SKIPPED: no CUDA device.*$")
        if skipped and gpu and no_device:
            return "FAIL", f"a GPU is present ({gpu}) but the test skipped: {no_device}"
        if skipped and not passed:
            why = first_line(out, r"SKIPPED: .*$") or "see the stage log"
            return "SKIPPED", why
        return "PASS", counts + (f" ({first_line(out, r'SKIPPED: .*$')})" if skipped else "")
    return classify


def conformance_classifier(gpu):
    def classify(rc, out):
        no_device = first_line(out, r"^\[FAIL\] backend/create: .*no CUDA device.*$")
        if no_device and not gpu:
            return "SKIPPED", "no CUDA device (the cuda backend's conformance needs one)"
        summary = first_line(out, r"^conformance: \d+ passed, \d+ failed.*$")
        if rc == 0 and re.search(r"^conformance: \d+ passed, 0 failed", out, re.M):
            return "PASS", summary
        fails = re.findall(r"^\[FAIL\] (.*)$", out, re.M)
        return "FAIL", f"rc {rc}; {summary or 'no summary'}" + (f"; {fails[0][:160]}" if fails else "")
    return classify


# The trainer's refusal on a GPU without FP8 GEMMs (trainer/core/run_plugins.cc).
NO_FP8_HARDWARE = r"^.*does not support \S+ \(FP8 tensor cores: sm_89 or newer\).*$"


def train_classifier(gpu, fp8_hardware=False):
    """`fp8_hardware`: the GPU is one known to have FP8 tensor cores, so a
    refusal for want of them is a failure, not a skip."""
    def classify(rc, out):
        losses = re.findall(r"^step\s+\d+/\d+\s+loss\s+([0-9.naninf]+)", out, re.M)
        ev = re.findall(r"^eval\s+step\s+\d+\s+loss\s+([0-9.]+)(?:\s+accuracy\s+([0-9.]+%))?",
                        out, re.M)
        if "no CUDA device" in out:
            if gpu:
                return "FAIL", f"a GPU is present ({gpu}) but: {first_line(out, r'^.*no CUDA device.*$')}"
            return "SKIPPED", "no CUDA device"
        no_fp8 = first_line(out, NO_FP8_HARDWARE)
        if rc != 0 and no_fp8 and not fp8_hardware:
            return "SKIPPED", f"no FP8 tensor cores: {no_fp8}"
        if rc != 0:
            err = [l for l in out.splitlines() if "error" in l.lower()]
            return "FAIL", f"rc {rc}: {err[-1][:160] if err else 'see the stage log'}"
        if any(x in ("nan", "inf") for x in losses):
            return "FAIL", f"non-finite loss: {', '.join(losses)}"
        detail = f"loss {losses[0] if losses else '-'} -> {losses[-1] if losses else '-'}"
        if ev:
            detail += f"; eval {ev[-1][0]}" + (f", {ev[-1][1]}" if ev[-1][1] else "")
        return "PASS", detail
    return classify


def sanitizer_classifier(rc, out):
    summary = first_line(out, r"=+ ERROR SUMMARY: \d+ errors?")
    m = re.search(r"ERROR SUMMARY: (\d+) error", out)
    if m and int(m.group(1)) > 0:
        where = first_line(out, r"=+ (Invalid|Uninitialized|Race|Barrier|Program hit).*$")
        return "FAIL", f"{summary}{'; ' + where if where else ''}"
    unsupported = first_line(out, r"^.*(Device not supported|not supported on this|"
                                  r"Unable to find injection library|Target application terminated "
                                  r"before first instrumented API call).*$")
    if unsupported and not m:
        return "SKIPPED", f"compute-sanitizer cannot run here: {unsupported}"
    if "SKIPPED: no CUDA device" in out:
        return "SKIPPED", "no CUDA device"
    if rc != 0:
        return "FAIL", f"rc {rc}; {summary or first_line(out, r'^.*FAILED.*$') or 'see the stage log'}"
    return "PASS", summary or "no error summary printed"


def hf_classifier(rc, out):
    """hf_logits_check.py: exit 0 pass, 2 skipped (no transformers), else fail."""
    line = first_line(out, r"^(PASS|FAIL|SKIPPED):.*$") or first_line(out, r"^.*\S.*$")
    return {0: "PASS", 2: "SKIPPED"}.get(rc, "FAIL"), line


# ---------------------------------------------------------------- stage 1

def bundle_tests():
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(BUNDLE, "bin", "cuda_*test"))
                  if os.path.isfile(p))


def stage1_items(ctx):
    gpu = ctx.gpu
    test_env = {"MANTISSA_EXPECT_GPU": "1"} if gpu else {}
    if gpu and "libcudnn.so.9" in ctx.libs:
        test_env["MANTISSA_REQUIRE_CUDNN"] = "1"
    if gpu and "libnccl.so.2" in ctx.libs:
        test_env["MANTISSA_REQUIRE_NCCL"] = "1"
    items = []
    for name in bundle_tests():
        tmp = os.path.join(ctx.work, name)
        os.makedirs(tmp, exist_ok=True)
        items.append(Item("1", "test", name, [os.path.join(BUNDLE, "bin", name)],
                          ctx.args.test_timeout, gtest_classifier(gpu),
                          env=dict(test_env, TEST_TMPDIR=tmp)))
    conformance = os.path.join(BUNDLE, "bin", "plugin_conformance")
    if os.path.exists(conformance):
        items.append(Item("1", "test", "plugin_conformance(cuda)",
                          [conformance, os.path.join(BUNDLE, "runfiles", "mantissa", "plugins",
                                                     "backends", "cuda", "mnt_backend_cuda.so")],
                          ctx.args.test_timeout, conformance_classifier(gpu), env=test_env))

    def train_item(model, prec):
        args = [os.path.join(BUNDLE, "bin", "train"), "--device=cuda", f"--precision={prec}",
                "--progress=plain", f"--cache_dir={ctx.work}/cache", "--checkpoint_dir="]
        args += TRAIN_JOBS[model]
        if model == "gpt2":
            args += [f"--train_shards={ctx.shard}", f"--val_shards={ctx.shard}"]
        return Item("1", "train", f"train {model} {prec}", args, ctx.args.train_timeout,
                    train_classifier(gpu, fp8_hardware=bool(datasheet_for(ctx))))

    for model in ("mlp", "cnn", "gpt2"):
        for prec in TRAIN_PRECISIONS:
            items.append(train_item(model, prec))
    hf_check = os.path.join(HERE, "hf_logits_check.py")
    if os.path.exists(hf_check):
        items.append(Item("1", "hf", "hf_logits",
                          [ctx.args.torch_python, hf_check, "--bin=" + os.path.join(BUNDLE, "bin"),
                           "--work=" + os.path.join(ctx.work, "hf_logits")],
                          ctx.args.train_timeout * 2, hf_classifier))
    # fp8 last of the tests-and-training pass (after bf16 and the HF check):
    # the workers take items in order and start none within 5 s of the
    # deadline, so a short stage loses this row before any other of the
    # pass (memcheck, a pass of its own after it, is lost before it, as
    # always). The same config as the bf16 row. It needs FP8 tensor cores
    # (sm_89+): where the backend refuses for want of them the row is
    # SKIPPED with its line, except on a GPU the datasheet table knows
    # (H100/H200), where that refusal is a failure.
    for model in FP8_TRAIN_MODELS:
        items.append(train_item(model, "fp8"))
    sanitizer = find_sanitizer()
    bundled = bundle_tests() if sanitizer else []
    for name in SANITIZED_TESTS:
        if name not in bundled:
            continue
        items.append(Item("1", "memcheck", f"memcheck {name}",
                          [sanitizer, "--tool", "memcheck", "--error-exitcode", "86",
                           "--print-limit", "20", os.path.join(BUNDLE, "bin", name)],
                          ctx.args.sanitizer_timeout, sanitizer_classifier,
                          env=dict(test_env, TEST_TMPDIR=os.path.join(ctx.work, name))))
    return items, sanitizer


def run_stage1(ctx, results, wanted):
    start = time.time()
    deadline = start + ctx.args.stage1_budget
    if wanted("1", "env", "libraries"):
        problems = library_problems(ctx.libs)
        results.row("1", "env", "libraries", "FAIL" if problems else "PASS", 0,
                    "; ".join(problems) or ", ".join(sorted(ctx.libs)))
    if wanted("1", "env", "gpu"):
        results.row("1", "env", "gpu", "PASS" if ctx.gpu else "SKIPPED", 0,
                    ctx.gpu or "no GPU on this machine (nvidia-smi, /dev/nvidia*)")
    items, sanitizer = stage1_items(ctx)
    if not sanitizer and wanted("1", "memcheck", "compute-sanitizer"):
        results.row("1", "memcheck", "compute-sanitizer", "SKIPPED", 0,
                    "compute-sanitizer not found (PATH, /usr/local/cuda*/bin, /opt/nvidia)")
    items = [i for i in items if wanted(i.stage, i.part, i.name)]
    # Tests and training first, 4 at a time on the one GPU (16 CPU cores);
    # memcheck last, so a cut loses the slowest part first.
    run_items([i for i in items if i.part != "memcheck"], ctx.args.workers, deadline, results, ctx)
    run_items([i for i in items if i.part == "memcheck"], ctx.args.workers, deadline, results, ctx)
    return time.time() - start


# ---------------------------------------------------------------- stage 2

def datasheet_for(ctx):
    for key, spec in DATASHEET.items():
        if key in (ctx.gpu_name or ""):
            return spec
    return ""


# Mantissa's benchmark rows in the order they run: 16-bit first (the goals'
# rows), then the 32-bit ones, fp8 last: the rows run while stage 2 has time
# left (PyTorch's reserve kept), so a cut loses fp8 first.
BENCH_ORDER = ["bf16", "fp16", "tf32", "fp32", "fp8"]
# PyTorch's side (gpt2_torch_bench.py): autocast and TF32 modes only; fp8 is
# left out (see run_stage2).
TORCH_PRECISIONS = ["bf16", "fp16", "tf32", "fp32"]


def bench_rows(args):
    """(precision, batch, ckpt) of Mantissa's rows in BENCH_ORDER;
    checkpointing only where asked (the goal's bf16 pair)."""
    out = []
    precs = [p for p in BENCH_ORDER if p in args.precisions.split(",")]
    for b in args.batches.split(","):
        for p in precs:
            out.append((p, b, "off"))
            if p in args.checkpointing_precisions.split(","):
                out.append((p, b, "on"))
    return out


def bench_name(fw, prec, batch, ckpt):
    return f"{fw} {prec} B={batch} ckpt={ckpt}"


def csv_status(row):
    return {"ok": "PASS", "skipped": "SKIPPED", "timeout": "TIMEOUT"}.get(row["status"], "FAIL")


def run_stage2(ctx, results, wanted):
    start = time.time()
    deadline = start + ctx.args.stage2_budget
    csv_path = results.bench_csv
    ds = datasheet_for(ctx)
    # PyTorch's rows keep part of the stage (at most 40% of it).
    reserve = min(ctx.args.torch_reserve, 0.4 * ctx.args.stage2_budget)
    for prec, batch, ckpt in bench_rows(ctx.args):
        name = bench_name("mantissa", prec, batch, ckpt)
        if not wanted("2", "bench", name):
            continue
        left = deadline - time.time() - reserve
        if left < 10:
            append_csv(csv_path, ["mantissa", prec, batch, 1024, ckpt, "not-run"] + [""] * 7
                       + ["no time left in stage 2"])
            results.row("2", "bench", name, "NOT-RUN", 0, "no time left in stage 2")
            continue
        results.row("2", "bench", name, "STARTED")
        before = len(read_csv(csv_path))
        cmd = [os.path.join(BUNDLE, "bin", "gpt2_benchmark"), "--bench_device=cuda",
               f"--bench_precisions={prec}", f"--bench_batches={batch}",
               f"--bench_checkpointing={ckpt}", "--bench_model_options=preset=gpt2-124m",
               "--bench_seq_len=1024", f"--bench_steps={ctx.args.steps}",
               f"--bench_warmup_steps={ctx.args.warmup}", "--bench_gemm_size=8192",
               f"--bench_train_shards={ctx.shard}", f"--bench_csv={csv_path}", "--bench_python="]
        if ds:
            cmd.append(f"--bench_datasheet_tflops={ds}")
        rc, secs, out = run_streamed(cmd, ctx.env, min(ctx.args.bench_timeout, left), results, "2",
                                     name)
        rows = read_csv(csv_path)[before:]
        if rows:
            r = rows[-1]
            status = csv_status(r)
            if status == "SKIPPED" and ctx.gpu and "no CUDA device" in r["note"]:
                status = "FAIL"
            if status == "FAIL" and not ds and re.search(NO_FP8_HARDWARE, r["note"], re.M):
                status = "SKIPPED"  # fp8 on a GPU without FP8 tensor cores
            detail = (f"{float(r['tokens_per_s']):.0f} tokens/s, {float(r['ms_per_step']):.1f} ms/step"
                      if r["status"] == "ok" else r["note"])
        else:
            status = "TIMEOUT" if rc is None else "FAIL"
            detail = f"killed after {secs:.0f} s" if rc is None else f"rc {rc}, no row"
            append_csv(csv_path, ["mantissa", prec, batch, 1024, ckpt, status.lower()] + [""] * 7
                       + [detail])
        results.row("2", "bench", name, status, secs, detail)

    # No PyTorch fp8 row: PyTorch has no built-in FP8 training (autocast
    # knows no FP8; FP8 GEMMs need Transformer Engine or torchao, which a
    # PyTorch image does not ship), so Mantissa's fp8 row has no pair.
    torch_rows = [(p, b, "off") for b in ctx.args.batches.split(",")
                  for p in ctx.args.torch_precisions.split(",") if p in TORCH_PRECISIONS]
    torch_rows = [r for r in torch_rows if wanted("2", "torch", bench_name("pytorch", *r))]
    if torch_rows:
        run_torch(ctx, results, torch_rows, deadline)

    if wanted("2", "cuda_benchmark", "cuda_benchmark"):
        left = deadline - time.time()
        if left < 20:
            results.row("2", "cuda_benchmark", "cuda_benchmark", "NOT-RUN", 0,
                        "no time left in stage 2")
        else:
            results.row("2", "cuda_benchmark", "cuda_benchmark", "STARTED")
            rc, secs, out = run_streamed([os.path.join(BUNDLE, "bin", "cuda_benchmark")], ctx.env,
                                         left - 2, results, "2", "cuda_benchmark")
            if "no CUDA device" in out:
                status = "FAIL" if ctx.gpu else "SKIPPED"
                detail = "no CUDA device"
            elif rc is None:
                status, detail = "TIMEOUT", f"cut after {secs:.0f} s (rows so far in stage2.log)"
            else:
                status, detail = ("PASS", "rows in stage2.log") if rc == 0 else ("FAIL", f"rc {rc}")
            results.row("2", "cuda_benchmark", "cuda_benchmark", status, secs, detail)
    return time.time() - start


def run_torch(ctx, results, rows, deadline):
    """PyTorch's rows in one process (one compile per precision), started
    after Mantissa's rows; its own deadline stops rows that would not end."""
    precs = sorted({p for p, _, _ in rows}, key=ctx.args.torch_precisions.split(",").index)
    batches = sorted({b for _, b, _ in rows}, key=int)
    out_csv = os.path.join(ctx.work, "torch_rows.csv")
    cmd = [ctx.args.torch_python, "-u", os.path.join(HERE, "gpt2_torch_bench.py"), "--device=cuda",
           f"--batches={','.join(batches)}", "--seq=1024", f"--precisions={','.join(precs)}",
           "--checkpointing=off", f"--steps={ctx.args.steps}", f"--warmup={ctx.args.warmup}",
           f"--data={ctx.shard}", "--gemm_size=8192", f"--csv={out_csv}",
           f"--deadline={deadline - 3:.0f}"]
    if datasheet_for(ctx):
        cmd.append(f"--datasheet={datasheet_for(ctx)}")
    names = [bench_name("pytorch", *r) for r in rows]
    for n in names:
        results.row("2", "torch", n, "STARTED")
    # PyTorch's own environment: none of the bundle's library paths.
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    left = deadline - time.time()
    rc, secs, out = run_streamed(cmd, env, max(left, 1), results, "2", "pytorch", cwd=ctx.work)
    skipped = re.search(r"^skipped: (.*)$", out, re.M)
    got = {}
    for r in read_csv(out_csv):
        append_csv(results.bench_csv, [r.get(k, "") for k in CSV_HEADER])
        got[(r["precision"], r["batch"], r["ckpt"])] = r
    for (p, b, c), n in zip(rows, names):
        r = got.get((p, b, c))
        if r is not None:
            status = csv_status(r)
            detail = (f"{float(r['tokens_per_s']):.0f} tokens/s" if r["status"] == "ok"
                      else r["note"])
        elif skipped:
            status, detail = "SKIPPED", skipped.group(1)[:200]
            append_csv(results.bench_csv, ["pytorch", p, b, 1024, c, "skipped"] + [""] * 7
                       + [detail])
        else:
            status = "TIMEOUT" if rc is None else "FAIL"
            detail = f"no row (rc {rc}); see stage2.log"
            append_csv(results.bench_csv, ["pytorch", p, b, 1024, c, status.lower()] + [""] * 7
                       + [detail])
        results.row("2", "torch", n, status, secs, detail)


# ---------------------------------------------------------------- summary

def fmt(v, pct=False):
    if v in ("", None):
        return "-"
    x = float(v)
    return f"{100 * x:.1f}%" if pct else (f"{x:.0f}" if x >= 100 else f"{x:.2f}")


def bench_table(rows, datasheet=""):
    by = {(r["framework"], r["precision"], r["batch"], r["ckpt"]): r for r in rows}
    keys = sorted({(r["precision"], r["batch"], r["ckpt"]) for r in rows},
                  key=lambda k: (PRECISIONS.index(k[0]) if k[0] in PRECISIONS else 9,
                                 int(k[1]), k[2]))
    out = ["## GPT-2 124M training, T=1024 (Mantissa vs PyTorch)", "",
           "MFU meas = against the GEMM rate each framework measured in the same run "
           "(8192^3, that precision); MFU data = against the datasheet dense peak"
           + (f" ({datasheet} TFLOP/s)" if datasheet else " (unknown GPU: none)")
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
            if r is None and fw == "pytorch" and k[0] not in TORCH_PRECISIONS:
                cells += ["none: no built-in FP8 training in PyTorch"] + ["-"] * 5
            elif r is None:
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
    return out


# The goals (GPT-2 124M, T=1024, B=16 on an H200), each checked against the
# rows of bench.csv: (name, threshold text, function of the rows giving
# (figure, passed) or raising KeyError when a row it needs is missing).
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
    out = [f"## Goals (GPT-2 124M, B={GOAL_BATCH}, T=1024)", "",
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


PART_TITLES = [("env", "Environment"), ("test", "GPU tests"), ("train", "train --device=cuda"),
               ("hf", "Hugging Face export (transformers' logits vs Mantissa's)"),
               ("memcheck", "compute-sanitizer memcheck"), ("bench", "Mantissa benchmark rows"),
               ("torch", "PyTorch benchmark rows"), ("cuda_benchmark", "cuda_benchmark")]


def summary_lines(results, extra=None):
    last = last_rows(results.rows)
    counts = {}
    for r in last.values():
        status = "RUNNING" if r["status"] == "STARTED" else r["status"]
        counts[status] = counts.get(status, 0) + 1
    out = list(results.header_lines)
    out += ["", "Items: " + (", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "none yet")
            + f" ({time.time() - results.t0:.0f} s since the start)."]
    if counts.get("RUNNING"):
        out.append("RUNNING = started and not ended: the run was cut (or is still going) there.")
    for part, title in PART_TITLES:
        these = [r for r in last.values() if r["part"] == part]
        if not these:
            continue
        out += ["", f"## {title}", "", "| item | result | time | detail |", "|---|---|---|---|"]
        for r in these:
            status = "RUNNING" if r["status"] == "STARTED" else r["status"]
            out.append(f"| {r['name']} | {status} | {r['seconds']} s | {r['detail']} |")
    out += ["", "## Slow paths the backend announced (once per shape)", ""]
    out += [f"- {s}" for s in results.said] or ["none"]
    bench = read_csv(results.bench_csv)
    if bench:
        out += [""] + bench_table(bench, results.datasheet) + [""] + goal_lines(bench)
    if extra:
        out += [""] + extra
    return out


# ---------------------------------------------------------------- main

class Ctx:
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", default=os.path.join(BUNDLE, "results"))
    p.add_argument("--stage", default="all", choices=["1", "2", "all"])
    p.add_argument("--rerun-failed", dest="rerun_failed", default="",
                   help="an earlier run's results.tsv: run only what it did not pass or skip")
    p.add_argument("--only", default="", help="a regular expression over item names")
    p.add_argument("--stage1_budget", type=float, default=240.0)
    p.add_argument("--stage2_budget", type=float, default=240.0)
    p.add_argument("--workers", type=int, default=4, help="stage 1 items at a time")
    p.add_argument("--test_timeout", type=float, default=120)
    p.add_argument("--train_timeout", type=float, default=60)
    p.add_argument("--sanitizer_timeout", type=float, default=90)
    p.add_argument("--bench_timeout", type=float, default=40)
    p.add_argument("--torch_reserve", type=float, default=90,
                   help="seconds of stage 2 kept for PyTorch's rows")
    p.add_argument("--precisions", default="fp32,tf32,bf16,fp16,fp8",
                   help="Mantissa's benchmark rows (run in the order bf16, fp16, tf32, fp32, "
                   "fp8)")
    p.add_argument("--batches", default="16")
    p.add_argument("--checkpointing_precisions", default="bf16",
                   help="precisions also benchmarked with gradient checkpointing")
    p.add_argument("--torch_precisions", default="bf16,fp16,tf32,fp32",
                   help="PyTorch's rows, in this order, as time allows (of "
                   + ", ".join(TORCH_PRECISIONS) + ": PyTorch has no built-in FP8 training)")
    p.add_argument("--steps", type=int, default=5, help="timed benchmark steps per row")
    p.add_argument("--warmup", type=int, default=2, help="benchmark warm-up steps per row")
    p.add_argument("--torch_python", default=sys.executable)
    p.add_argument("--print-env", action="store_true", dest="print_env")
    return p.parse_args(argv)


def environment_lines(ctx, lib_lines):
    smi = None
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True)
    ctx.gpu_name = smi.stdout.strip().split(",")[0] if smi and smi.returncode == 0 else ""
    lines = ["# Device check environment", "", f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
             f"bundle: {BUNDLE}",
             f"GPU: {smi.stdout.strip() if smi and smi.returncode == 0 else 'none (nvidia-smi: ' + ('not found' if smi is None else smi.stderr.strip()[:200]) + ')'}",
             f"GPU visible: {ctx.gpu or 'no'}", "", "CUDA libraries used:"]
    lines += ["  " + l for l in lib_lines]
    lines += ["", "versions:"] + ["  " + v for v in library_versions(ctx.libs)]
    lines += ["", f"compute-sanitizer: {find_sanitizer() or 'not found'}",
              f"LD_LIBRARY_PATH={ctx.env['LD_LIBRARY_PATH']}",
              f"RUNFILES_DIR={ctx.env['RUNFILES_DIR']}"]
    manifest = os.path.join(BUNDLE, "MANIFEST")
    if os.path.exists(manifest):
        with open(manifest) as f:
            lines += ["", "bundle manifest:", f.read().rstrip()]
    if smi is not None:
        full = subprocess.run(["nvidia-smi"], capture_output=True, text=True)
        lines += ["", full.stdout.rstrip()]
    return lines


def main(argv):
    args = parse_args(argv)
    t0 = time.time()
    lib_lines = []
    ld_dirs, libs = discover(lib_lines)
    if args.print_env:
        env = bundle_env(ld_dirs)
        for k in ("LD_LIBRARY_PATH", "RUNFILES_DIR", "TEST_SRCDIR", "TEST_WORKSPACE",
                  "MANTISSA_DIGITS_CSV"):
            print(f"export {k}='{env[k]}'")
        for l in lib_lines:
            print(f"echo 'env.sh: {l}' >&2")
        return 0

    # A copy that lost its mode bits (e.g. carried between machines) still runs.
    for f in glob.glob(os.path.join(BUNDLE, "bin", "*")):
        if not os.access(f, os.X_OK):
            os.chmod(f, 0o755)
    ctx = Ctx()
    ctx.args = args
    ctx.libs = libs
    ctx.env = bundle_env(ld_dirs)
    ctx.gpu = visible_gpu()
    os.makedirs(args.results, exist_ok=True)
    env_lines = environment_lines(ctx, lib_lines)
    with open(os.path.join(args.results, "environment.txt"), "w") as f:
        f.write("\n".join(env_lines) + "\n")
    print("\n".join(env_lines[:10 + len(lib_lines)]), flush=True)

    earlier = {}
    if args.rerun_failed:
        earlier = last_rows(read_tsv(args.rerun_failed))
    pattern = re.compile(args.only) if args.only else None

    def wanted(stage, part, name):
        if args.stage != "all" and stage != args.stage:
            return False
        if pattern is not None and not pattern.search(name):
            return False
        r = earlier.get((stage, part, name))
        return r is None or r["status"] not in DONE

    stages = ["1", "2"] if args.stage == "all" else [args.stage]
    header = ["# Mantissa device check", "",
              f"GPU: {ctx.gpu_name or 'none'}; stage {args.stage}"
              f" (budgets: stage 1 {args.stage1_budget:.0f} s, stage 2 {args.stage2_budget:.0f} s); "
              f"started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; libraries and versions: "
              "environment.txt; every output line: stage1.log, stage2.log"]
    if args.rerun_failed:
        header.append(f"Rerun of what {args.rerun_failed} did not pass or skip; its other rows "
                      "are copied in (time_s 0, detail 'earlier run: ...').")
    results = Results(args.results, t0, header)
    results.datasheet = datasheet_for(ctx)
    for (stage, part, name), r in earlier.items():
        if r["status"] in DONE and stage in stages:
            results.row(stage, part, name, r["status"], float(r["seconds"] or 0),
                        "earlier run: " + r["detail"], at=0)
    results.write_summary()

    work = tempfile.mkdtemp(prefix="mantissa_device_check.")
    ctx.work = work
    ctx.shard = os.path.join(work, "tokens.bin")
    subprocess.run([sys.executable, os.path.join(HERE, "make_token_shard.py"), ctx.shard],
                   check=True)
    timeline = []
    if "1" in stages:
        secs = run_stage1(ctx, results, wanted)
        timeline.append(f"stage 1 took {secs:.0f} s (budget {args.stage1_budget:.0f})")
        print(f"device check: stage 1 done at {time.time() - t0:.0f} s", flush=True)
    if "2" in stages:
        secs = run_stage2(ctx, results, wanted)
        timeline.append(f"stage 2 took {secs:.0f} s (budget {args.stage2_budget:.0f})")
        print(f"device check: stage 2 done at {time.time() - t0:.0f} s", flush=True)
    text = results.write_summary([f"Done: {'; '.join(timeline)}; total {time.time() - t0:.0f} s."])
    results.close()
    shutil.rmtree(work, ignore_errors=True)
    print("\n" + text, flush=True)
    bad = [r for r in last_rows(results.rows).values() if r["status"] in BAD]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
