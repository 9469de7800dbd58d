#!/usr/bin/env python3
"""The device check: run from an unpacked device bundle on a GPU machine
(device_bundle/run.sh RESULTS_DIR [options] calls this). One run does what
matters most first, inside one budget (--budget, 525 s: the device tool's
timeout_s of 540 less the summary and the exit), as parts in priority order:

  env    the interpreter with PyTorch and the CUDA libraries, found
         (device_env.py; environment.txt first), nvidia-smi, a token shard;
  test   every GPU test binary and the cuda backend's conformance run;
  train  `train --device=cuda` per model and precision, GPT-2 124M in bf16
         with adamw8bit and adafactor, GPT-2 124M in fp8 the part's last item;
  bench  GPT-2 124M training throughput at T=1024, Mantissa's rows
         (//tools/benchmarks:gpt2_benchmark, one process per row; fp8 last);
  torch  PyTorch's rows on the same shapes and token shard
         (tools/benchmarks/gpt2_torch_bench.py, one process: torch.compile,
         SDPA, fused AdamW), with the chosen interpreter;
  rest   the HF logits check, compute-sanitizer memcheck over the small GPU
         tests, cuda_benchmark with what is left.

Each part has a budget (PARTS; --part_budget=PART=S changes one) and ends by
its cumulative deadline, so a part that ends early leaves its time to the
parts after it, and whatever does not fit is the least important. An item
still running at its part's deadline is killed with everything it started
(its process group, and any process carrying its marker in the environment,
its own sessions' too) and reads CUT; an item that could not start before
the deadline reads CUT too. A cut is not a failure: it counts apart, and
--rerun-failed runs it again. TIMEOUT is an item that outran its own limit
(a hang), and a failure.

`--plan` prints the parts, their items, budgets and deadlines and the total,
and runs nothing. `--parts=test,torch` and `--only=REGEX` (item names) pick
what runs; `--rerun-failed=RESULTS_TSV` runs only what an earlier run's
results.tsv did not record as PASS or SKIPPED (failed, timed out, cut, or
running when that run was cut) and copies the rest of its rows in, so the
new summary is whole; `--budget=S` gives a rerun its own budget.

Everything lands in the results folder the moment it exists, flushed, so a
run killed by the device tool's time limit still returns what it did (the
tool returns at most 8 files, flat):
  environment.txt  the interpreter chosen (torch and its CUDA), every
                   candidate tried, every CUDA library's path; then
                   versions, nvidia-smi, the bundle's manifest;
  results.tsv      one row per item as it starts (STARTED) and ends
                   (PASS, FAIL, TIMEOUT, SKIPPED, CUT) with its seconds and
                   a one-line reason (and any "measured:" lines it printed):
                   the input of --rerun-failed;
  check.log        every process's output, line by line as printed, each
                   line prefixed with the item's name;
  bench.csv        the benchmark rows (Mantissa's and PyTorch's);
  summary.md       rewritten after every row: counts, a table per part, the
                   slow paths the backend announced, the benchmark table and
                   the goals; printed last.
Exit status 1 when anything failed or timed out; else 3 when the budget cut
something; else 0.

A GPU that is there but unusable is a failure, not a skip: where
nvidia-smi or /dev/nvidia* shows a GPU, the tests run with
MANTISSA_EXPECT_GPU=1 (their skip becomes a failure that prints the driver
and runtime versions), any "no CUDA device" skip is reported as FAIL, and
so is finding no interpreter with torch.

`--print-env` prints the `export` lines for running the bundle's binaries
by hand (env.sh evals them). Standard library only; Python 3.8+.
"""
import argparse
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
sys.path.insert(0, HERE)
import device_env  # noqa: E402

# The device tool's timeout_s this check is planned for, and what it keeps
# of it after the budget: the summary, the exit, the kill of leftovers.
TOOL_TIMEOUT = 540
BUDGET = 525

# (part, budget in seconds, what it does), in priority order.
PARTS = [
    ("env", 40, "the interpreter with torch and the CUDA libraries (environment.txt first), "
                "nvidia-smi, a 64k-token shard"),
    ("test", 120, "every GPU test binary and the cuda conformance run"),
    ("train", 70, "train --device=cuda per model x precision, GPT-2 124M fp8 last"),
    ("bench", 120, "GPT-2 124M, T=1024: Mantissa's rows, one process each, fp8 last"),
    ("torch", 120, "GPT-2 124M, T=1024: PyTorch's rows in one process (torch.compile)"),
    ("rest", 55, "HF logits check, compute-sanitizer memcheck, cuda_benchmark (what is left)"),
]
PART_NAMES = [p for p, _, _ in PARTS]

# Dense (no sparsity) datasheet peaks in TFLOP/s, H100/H200 SXM: FP32 67,
# TF32 tensor core 989 with sparsity = 494.7 dense, BF16/FP16 1979 with
# sparsity = 989.4 dense, FP8 3958 with sparsity = 1979 dense.
DATASHEET = {
    "H200": "fp32=67,tf32=494.7,bf16=989.4,fp16=989.4,fp8=1979",
    "H100 80GB HBM3": "fp32=67,tf32=494.7,bf16=989.4,fp16=989.4,fp8=1979",
}

# Every precision the check knows, in table order.
PRECISIONS = ["fp32", "tf32", "bf16", "fp16", "fp8"]
# Trained by every model.
TRAIN_PRECISIONS = ["fp32", "tf32", "bf16", "fp16"]
# fp8 (bf16 storage, FP8 GEMMs under delayed scaling; sm_89+) is trained by
# these models only, after everything else in the part: device time is
# scarce, and the newest path is the one a cut loses first.
FP8_TRAIN_MODELS = ["gpt2"]
# Trained once each on GPT-2 in bf16 (issue 39's optimizers).
LIGHT_OPTIMIZERS = ["adamw8bit", "adafactor"]

CSV_HEADER = ["framework", "precision", "batch", "seq", "ckpt", "status", "tokens_per_s",
              "ms_per_step", "mfu_measured", "mfu_datasheet", "gemm_tflops",
              "datasheet_tflops", "peak_mib", "note"]
TSV_HEADER = ["time_s", "part", "name", "status", "seconds", "detail"]
DONE = {"PASS", "SKIPPED"}  # what --rerun-failed does not run again
BAD = {"FAIL", "TIMEOUT"}   # what makes the exit status 1
CUT = "CUT"                 # stopped or not started at a budget: exit status 3

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

# Every process an item starts carries this variable (the run's id and the
# item's number), so a cut finds and kills them wherever they went.
ITEM_VAR = "MANTISSA_DEVICE_CHECK_ITEM"


# ---------------------------------------------------------------- results

def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def last_rows(rows):
    """The last row of each (part, name), in first-seen order."""
    out = {}
    for r in rows:
        out[(r["part"], r["name"])] = r
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
    (flushed and synced), check.log line by line, and summary.md rewritten
    (through a temporary file and a rename) after every row."""

    def __init__(self, folder, t0, header_lines):
        self.folder = folder
        self.t0 = t0
        self.header_lines = header_lines
        self.lock = threading.RLock()
        self.log_file = None
        self.tsv_path = os.path.join(folder, "results.tsv")
        self.bench_csv = os.path.join(folder, "bench.csv")
        self.said = []  # slow paths the backend announced
        self.rows = []  # what results.tsv holds, as dicts (the summary reads these)
        self.part_times = {}  # part -> (budget, deadline_s, ended_s)
        self.datasheet = ""
        os.makedirs(folder, exist_ok=True)
        fresh = not os.path.exists(self.tsv_path)
        self.tsv = open(self.tsv_path, "a", newline="")
        if fresh:
            self._write_tsv(TSV_HEADER)

    def _write_tsv(self, fields):
        self.tsv.write("\t".join(fields) + "\n")
        self.tsv.flush()
        os.fsync(self.tsv.fileno())

    def row(self, part, name, status, seconds=0.0, detail="", at=None):
        with self.lock:
            at = time.time() - self.t0 if at is None else at
            fields = [str(f).replace("\t", " ").replace("\n", " ") for f in
                      (f"{at:.0f}", part, name, status, f"{seconds:.0f}", detail)]
            self._write_tsv(fields)
            self.rows.append(dict(zip(TSV_HEADER, fields)))
            self.write_summary()

    def log(self, name, line):
        with self.lock:
            if self.log_file is None:
                self.log_file = open(os.path.join(self.folder, "check.log"), "a")
            self.log_file.write(f"[{name}] {line}" if line.endswith("\n") else f"[{name}] {line}\n")
            self.log_file.flush()
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
            if self.log_file is not None:
                self.log_file.close()
            self.tsv.close()


# ---------------------------------------------------------------- killing

def processes_marked(marker):
    """Pids of the processes whose environment holds `marker` (bytes: the
    variable, '=', and a value or its start), through /proc."""
    me = os.getpid()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if (b"\0" + marker) in (b"\0" + env):
            out.append(int(d))
    return out


def kill_marked(marker, pgid=None):
    """SIGKILL to the process group and to every process carrying
    `marker`, again until none is left (one may fork while we look)."""
    if pgid is not None:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for _ in range(50):
        pids = processes_marked(marker)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)


class Runner:
    """Starts item processes, each marked with ITEM_VAR=<run>/<n>, and cuts
    them at their deadline."""

    def __init__(self, results):
        self.results = results
        self.run_id = f"{os.getpid()}.{int(time.time() * 1000) % 10**9}"
        self.count = 0
        self.lock = threading.Lock()

    def marker(self, n=None):
        return f"{ITEM_VAR}={self.run_id}/{'' if n is None else str(n) + chr(0)}".encode()

    def run(self, cmd, env, own_limit, deadline, name, cwd=None):
        """Runs cmd, copying each output line into check.log as it comes,
        until it exits, outruns `own_limit` seconds (TIMEOUT) or reaches
        `deadline`, its part's (CUT). (rc or None, seconds, output, how):
        how is "exit", "timeout" or "cut"."""
        with self.lock:
            self.count += 1
            n = self.count
        env = dict(env, **{ITEM_VAR: f"{self.run_id}/{n}"})
        t = time.time()
        self.results.log(name, "$ " + " ".join(cmd))
        try:
            p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 cwd=cwd, start_new_session=True)
        except OSError as e:
            self.results.log(name, f"cannot start: {e}")
            return 127, time.time() - t, f"cannot start: {e}\n", "exit"
        chunks = []

        def pump():
            for raw in iter(p.stdout.readline, b""):
                line = raw.decode("utf-8", "replace")
                chunks.append(line)
                self.results.log(name, line)
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        own_end = t + own_limit
        end = min(own_end, deadline)
        how = "exit"
        try:
            rc = p.wait(timeout=max(end - time.time(), 0.1))
        except subprocess.TimeoutExpired:
            how = "cut" if deadline <= own_end else "timeout"
            kill_marked(self.marker(n), pgid=p.pid)
            p.wait()
            rc = None
            self.results.log(name, f"killed after {time.time() - t:.0f} s: " +
                             ("its part's budget ran out" if how == "cut"
                              else f"its own limit ({own_limit:.0f} s)"))
        else:
            # What it left behind in other sessions goes too.
            kill_marked(self.marker(n), pgid=p.pid)
        reader.join(timeout=5)
        return rc, time.time() - t, "".join(chunks), how

    def kill_all(self):
        kill_marked(self.marker())


# ---------------------------------------------------------------- items

class Item:
    """One thing the check runs: a command, its own time limit and a
    function reading its (rc, output) into (status, detail)."""

    def __init__(self, part, name, cmd, timeout, classify, env=None, cwd=None):
        self.part, self.name = part, name
        self.cmd, self.timeout, self.classify = cmd, timeout, classify
        self.env, self.cwd = env, cwd


def measured_lines(out):
    """The "measured: ..." lines a test printed (numbers the results keep)."""
    return [m.strip()[len("measured: "):] for m in re.findall(r"^measured: .*$", out, re.M)]


def run_items(items, workers, deadline, results, ctx):
    """Runs items, `workers` at a time, none started within 5 s of
    `deadline` (those are CUT); each until its own limit (TIMEOUT) or the
    deadline (CUT), whichever comes first."""
    lock = threading.Lock()
    queue = list(items)

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                item = queue.pop(0)
            if deadline - time.time() < 5:
                results.row(item.part, item.name, CUT, 0,
                            f"not started: the {item.part} part's budget was spent")
                continue
            results.row(item.part, item.name, "STARTED")
            env = dict(ctx.env, **(item.env or {}))
            rc, secs, out, how = ctx.runner.run(item.cmd, env, item.timeout, deadline,
                                                item.name, cwd=item.cwd)
            if how == "cut":
                status, detail = CUT, (f"stopped after {secs:.0f} s: the {item.part} part's "
                                       "budget ran out (output so far in check.log)")
            elif how == "timeout":
                status, detail = "TIMEOUT", f"killed at its own limit, {item.timeout:.0f} s"
            elif out.startswith("cannot start"):
                status, detail = "FAIL", out.strip()[:200]
            else:
                status, detail = item.classify(rc, out)
            measured = measured_lines(out)
            if measured:
                detail += "; measured: " + "; ".join(measured)
            results.row(item.part, item.name, status, secs, detail)

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
            why = first_line(out, r"SKIPPED: .*$") or "see check.log"
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
            return "FAIL", f"rc {rc}: {err[-1][:160] if err else 'see check.log'}"
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
        return "FAIL", f"rc {rc}; {summary or first_line(out, r'^.*FAILED.*$') or 'see check.log'}"
    return "PASS", summary or "no error summary printed"


def hf_classifier(rc, out):
    """hf_logits_check.py: exit 0 pass, 2 skipped (no transformers), else fail."""
    line = first_line(out, r"^(PASS|FAIL|SKIPPED):.*$") or first_line(out, r"^.*\S.*$")
    return {0: "PASS", 2: "SKIPPED"}.get(rc, "FAIL"), line


# ---------------------------------------------------------------- environment

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


def datasheet_for(ctx):
    for key, spec in DATASHEET.items():
        if key in (ctx.gpu_name or ""):
            return spec
    return ""


def find_environment(ctx, args, deadline):
    """The interpreter and the libraries, into ctx; their lines (the head
    of environment.txt)."""
    lines = ["# Device check environment", "",
             f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}", f"bundle: {BUNDLE}",
             f"device check running on: {sys.executable} (Python {sys.version.split()[0]})", "",
             "Python with torch (PyTorch's rows, the HF check):"]
    tried = []
    roots = args.search_roots.split(",") if args.search_roots else device_env.SEARCH_ROOTS
    seconds = max(5.0, min(device_env.PYTHON_SECONDS, deadline - time.time() - 10))
    ctx.python = device_env.choose_python(tried, roots, seconds, only=args.torch_python)
    if ctx.python:
        lines += [f"  chosen: {ctx.python['executable']}", f"  {device_env.describe(ctx.python)}",
                  f"  site-packages: {', '.join(ctx.python.get('site', [])) or 'none'}"]
    else:
        lines.append("  chosen: none (no interpreter tried has torch)")
    lines += ["  candidates tried, in order:"] + ["  " + t for t in tried]
    lib_lines = []
    ctx.ld_dirs, ctx.libs = device_env.discover(lib_lines, BUNDLE, ctx.python, roots)
    lines += ["", "CUDA libraries used (each path, then what it links to):"]
    lines += ["  " + l for l in lib_lines]
    ctx.env = bundle_env(ctx.ld_dirs)
    lines += [f"LD_LIBRARY_PATH={ctx.env['LD_LIBRARY_PATH']}",
              f"RUNFILES_DIR={ctx.env['RUNFILES_DIR']}"]
    return lines


def environment_tail(ctx):
    """What environment.txt holds after the interpreter and the libraries."""
    smi = None
    if shutil.which("nvidia-smi"):
        try:
            smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                                  "--format=csv,noheader"], capture_output=True, text=True,
                                 timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            smi = None
    ctx.gpu_name = smi.stdout.strip().split(",")[0] if smi and smi.returncode == 0 else ""
    lines = ["", f"GPU: {smi.stdout.strip() if smi and smi.returncode == 0 else 'none (nvidia-smi: ' + ('not found' if smi is None else smi.stderr.strip()[:200]) + ')'}",
             f"GPU visible: {ctx.gpu or 'no'}"]
    lines += ["", "versions:"] + ["  " + v for v in library_versions(ctx.libs)]
    lines += ["", f"compute-sanitizer: {find_sanitizer() or 'not found'}"]
    manifest = os.path.join(BUNDLE, "MANIFEST")
    if os.path.exists(manifest):
        with open(manifest) as f:
            lines += ["", "bundle manifest:", f.read().rstrip()]
    if smi is not None:
        try:
            full = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=20)
            lines += ["", full.stdout.rstrip()]
        except (OSError, subprocess.TimeoutExpired):
            pass
    return lines


def run_env(ctx, results, deadline, wanted):
    """The env part's rows (what it found was written by main already)."""
    if wanted("env", "python"):
        if ctx.python:
            results.row("env", "python", "PASS", 0,
                        f"{ctx.python['executable']}: {device_env.describe(ctx.python)}")
        else:
            status = "FAIL" if ctx.gpu else "SKIPPED"
            results.row("env", "python", status, 0,
                        "no interpreter with torch found (environment.txt lists those tried); "
                        "PyTorch's rows and the HF check cannot run")
    if wanted("env", "libraries"):
        problems = device_env.library_problems(ctx.libs)
        results.row("env", "libraries", "FAIL" if problems else "PASS", 0,
                    "; ".join(problems) or ", ".join(sorted(ctx.libs)))
    if wanted("env", "gpu"):
        results.row("env", "gpu", "PASS" if ctx.gpu else "SKIPPED", 0,
                    ctx.gpu or "no GPU on this machine (nvidia-smi, /dev/nvidia*)")


# ---------------------------------------------------------------- the parts' items

def bundle_tests():
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(BUNDLE, "bin", "cuda_*test"))
                  if os.path.isfile(p))


def test_env(ctx):
    env = {"MANTISSA_EXPECT_GPU": "1"} if ctx.gpu else {}
    if ctx.gpu and "libcudnn.so.9" in ctx.libs:
        env["MANTISSA_REQUIRE_CUDNN"] = "1"
    if ctx.gpu and "libnccl.so.2" in ctx.libs:
        env["MANTISSA_REQUIRE_NCCL"] = "1"
    return env


def test_items(ctx):
    gpu, env = ctx.gpu, test_env(ctx)
    items = []
    for name in bundle_tests():
        items.append(Item("test", name, [os.path.join(BUNDLE, "bin", name)],
                          ctx.args.test_timeout, gtest_classifier(gpu),
                          env=dict(env, TEST_TMPDIR=os.path.join(ctx.work, name))))
    conformance = os.path.join(BUNDLE, "bin", "plugin_conformance")
    if os.path.exists(conformance):
        items.append(Item("test", "plugin_conformance(cuda)",
                          [conformance, os.path.join(BUNDLE, "runfiles", "mantissa", "plugins",
                                                     "backends", "cuda", "mnt_backend_cuda.so")],
                          ctx.args.test_timeout, conformance_classifier(gpu), env=env))
    return items


def train_items(ctx):
    def item(model, prec, optimizer=None):
        cmd = [os.path.join(BUNDLE, "bin", "train"), "--device=cuda", f"--precision={prec}",
               "--progress=plain", f"--cache_dir={ctx.work}/cache", "--checkpoint_dir="]
        cmd += TRAIN_JOBS[model]
        if model == "gpt2":
            cmd += [f"--train_shards={ctx.shard}", f"--val_shards={ctx.shard}"]
        name = f"train {model} {prec}"
        if optimizer:
            cmd.append(f"--optimizer={optimizer}")
            name += " " + optimizer
        return Item("train", name, cmd, ctx.args.train_timeout,
                    train_classifier(ctx.gpu, fp8_hardware=bool(datasheet_for(ctx))))

    items = [item(model, prec) for model in ("mlp", "cnn", "gpt2") for prec in TRAIN_PRECISIONS]
    # The memory-light optimizers through the trainer on the GPU (their
    # kernels against the CPU's: cuda_memory_light_optimizers_test), as the
    # bf16 row; before fp8, so a short part still loses fp8 first.
    items += [item("gpt2", "bf16", optimizer) for optimizer in LIGHT_OPTIMIZERS]
    # fp8 last of the part: the workers take items in order and start none
    # within 5 s of the deadline, so a short part loses this row first. The
    # same config as the bf16 row. It needs FP8 tensor cores (sm_89+): where
    # the backend refuses for want of them the row is SKIPPED with its line,
    # except on a GPU the datasheet table knows (H100/H200), where that
    # refusal is a failure.
    items += [item(model, "fp8") for model in FP8_TRAIN_MODELS]
    return items


def hf_item(ctx):
    hf_check = os.path.join(HERE, "hf_logits_check.py")
    if not os.path.exists(hf_check):
        return None
    python = ctx.python["executable"] if ctx.python else "python3"
    return Item("rest", "hf_logits",
                [python, hf_check, "--bin=" + os.path.join(BUNDLE, "bin"),
                 "--work=" + os.path.join(ctx.work, "hf_logits")],
                ctx.args.train_timeout * 2, hf_classifier)


def memcheck_items(ctx, sanitizer):
    bundled = bundle_tests()
    env = test_env(ctx)
    return [Item("rest", f"memcheck {name}",
                 [sanitizer or "compute-sanitizer", "--tool", "memcheck", "--error-exitcode", "86",
                  "--print-limit", "20", os.path.join(BUNDLE, "bin", name)],
                 ctx.args.sanitizer_timeout, sanitizer_classifier,
                 env=dict(env, TEST_TMPDIR=os.path.join(ctx.work, name)))
            for name in SANITIZED_TESTS if name in bundled]


# Mantissa's benchmark rows in the order they run: 16-bit first (the goals'
# rows), then the 32-bit ones, fp8 last, so a cut loses fp8 first.
BENCH_ORDER = ["bf16", "fp16", "tf32", "fp32", "fp8"]
# PyTorch's side (gpt2_torch_bench.py): autocast and TF32 modes only; no
# fp8 row (see run_torch).
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


def torch_rows(args):
    return [(p, b, "off") for b in args.batches.split(",")
            for p in args.torch_precisions.split(",") if p in TORCH_PRECISIONS]


def bench_name(fw, prec, batch, ckpt):
    return f"{fw} {prec} B={batch} ckpt={ckpt}"


def csv_status(row):
    if row["status"] == "skipped" and row["note"].startswith("time budget"):
        return CUT
    return {"ok": "PASS", "skipped": "SKIPPED", "timeout": "TIMEOUT", "cut": CUT}.get(
        row["status"], "FAIL")


# ---------------------------------------------------------------- the parts

def run_tests(ctx, results, deadline, wanted):
    items = [i for i in test_items(ctx) if wanted(i.part, i.name)]
    run_items(items, ctx.args.workers, deadline, results, ctx)


def run_train(ctx, results, deadline, wanted):
    items = [i for i in train_items(ctx) if wanted(i.part, i.name)]
    run_items(items, ctx.args.train_workers, deadline, results, ctx)


def run_bench(ctx, results, deadline, wanted):
    """Mantissa's rows, one gpt2_benchmark process each, in BENCH_ORDER."""
    csv_path = results.bench_csv
    ds = datasheet_for(ctx)
    for prec, batch, ckpt in bench_rows(ctx.args):
        name = bench_name("mantissa", prec, batch, ckpt)
        if not wanted("bench", name):
            continue
        if deadline - time.time() < 10:
            detail = "not started: the bench part's budget was spent"
            append_csv(csv_path, ["mantissa", prec, batch, 1024, ckpt, "cut"] + [""] * 7 + [detail])
            results.row("bench", name, CUT, 0, detail)
            continue
        results.row("bench", name, "STARTED")
        before = len(read_csv(csv_path))
        cmd = [os.path.join(BUNDLE, "bin", "gpt2_benchmark"), "--bench_device=cuda",
               f"--bench_precisions={prec}", f"--bench_batches={batch}",
               f"--bench_checkpointing={ckpt}", "--bench_model_options=preset=gpt2-124m",
               "--bench_seq_len=1024", f"--bench_steps={ctx.args.steps}",
               f"--bench_warmup_steps={ctx.args.warmup}", "--bench_gemm_size=8192",
               f"--bench_train_shards={ctx.shard}", f"--bench_csv={csv_path}", "--bench_python="]
        if ds:
            cmd.append(f"--bench_datasheet_tflops={ds}")
        rc, secs, out, how = ctx.runner.run(cmd, ctx.env, ctx.args.bench_timeout, deadline, name)
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
            if how == "cut":
                status, word = CUT, "cut"
                detail = f"stopped after {secs:.0f} s: the bench part's budget ran out"
            elif how == "timeout":
                status, word = "TIMEOUT", "timeout"
                detail = f"killed at its own limit, {ctx.args.bench_timeout:.0f} s"
            else:
                status, word, detail = "FAIL", "fail", f"rc {rc}, no row"
            append_csv(csv_path, ["mantissa", prec, batch, 1024, ckpt, word] + [""] * 7 + [detail])
        results.row("bench", name, status, secs, detail)


def run_torch(ctx, results, deadline, wanted):
    """PyTorch's rows in one process (one compile per precision) with the
    chosen interpreter; its own --deadline stops rows that would not end.
    No fp8 row: PyTorch has no built-in FP8 training (autocast knows no FP8;
    FP8 GEMMs need Transformer Engine or torchao), so Mantissa's fp8 row has
    no pair."""
    rows = [r for r in torch_rows(ctx.args) if wanted("torch", bench_name("pytorch", *r))]
    if not rows:
        return
    names = [bench_name("pytorch", *r) for r in rows]
    if not ctx.python:
        why = "no interpreter with torch found (environment.txt)"
        for (p, b, c), n in zip(rows, names):
            append_csv(results.bench_csv, ["pytorch", p, b, 1024, c, "skipped"] + [""] * 7 + [why])
            results.row("torch", n, "FAIL" if ctx.gpu else "SKIPPED", 0, why)
        return
    precs = sorted({p for p, _, _ in rows}, key=ctx.args.torch_precisions.split(",").index)
    batches = sorted({b for _, b, _ in rows}, key=int)
    out_csv = os.path.join(ctx.work, "torch_rows.csv")
    cmd = [ctx.python["executable"], "-u", os.path.join(HERE, "gpt2_torch_bench.py"),
           "--device=cuda", f"--batches={','.join(batches)}", "--seq=1024",
           f"--precisions={','.join(precs)}", "--checkpointing=off", f"--steps={ctx.args.steps}",
           f"--warmup={ctx.args.warmup}", f"--data={ctx.shard}", "--gemm_size=8192",
           f"--csv={out_csv}", f"--deadline={deadline - 3:.0f}"]
    if datasheet_for(ctx):
        cmd.append(f"--datasheet={datasheet_for(ctx)}")
    for n in names:
        results.row("torch", n, "STARTED")
    # PyTorch's own environment: none of the bundle's library paths.
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    rc, secs, out, how = ctx.runner.run(cmd, env, max(deadline - time.time(), 1), deadline,
                                        "pytorch", cwd=ctx.work)
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
            if ctx.gpu and "no CUDA device" in detail:
                status = "FAIL"
            append_csv(results.bench_csv, ["pytorch", p, b, 1024, c, "skipped"] + [""] * 7
                       + [detail])
        elif how != "exit":
            status, detail = CUT, f"stopped after {secs:.0f} s: the torch part's budget ran out"
            append_csv(results.bench_csv, ["pytorch", p, b, 1024, c, "cut"] + [""] * 7 + [detail])
        else:
            status, detail = "FAIL", f"no row (rc {rc}); see check.log"
            append_csv(results.bench_csv, ["pytorch", p, b, 1024, c, "fail"] + [""] * 7 + [detail])
        results.row("torch", n, status, secs, detail)


def run_rest(ctx, results, deadline, wanted):
    """The HF check, then memcheck, then cuda_benchmark with what is left."""
    hf = hf_item(ctx)
    if hf is not None and wanted("rest", hf.name):
        if ctx.python:
            run_items([hf], 1, deadline, results, ctx)
        else:
            results.row("rest", hf.name, "SKIPPED", 0,
                        "no interpreter with torch found (environment.txt)")
    sanitizer = find_sanitizer()
    if not sanitizer:
        if wanted("rest", "compute-sanitizer"):
            results.row("rest", "compute-sanitizer", "SKIPPED", 0,
                        "compute-sanitizer not found (PATH, /usr/local/cuda*/bin, /opt/nvidia)")
    else:
        items = [i for i in memcheck_items(ctx, sanitizer) if wanted(i.part, i.name)]
        run_items(items, ctx.args.workers, deadline, results, ctx)
    if wanted("rest", "cuda_benchmark"):
        left = deadline - time.time()
        if left < 20:
            results.row("rest", "cuda_benchmark", CUT, 0,
                        "not started: the rest part's budget was spent")
            return
        results.row("rest", "cuda_benchmark", "STARTED")
        rc, secs, out, how = ctx.runner.run([os.path.join(BUNDLE, "bin", "cuda_benchmark")],
                                            ctx.env, left, deadline, "cuda_benchmark")
        if "no CUDA device" in out:
            status = "FAIL" if ctx.gpu else "SKIPPED"
            detail = "no CUDA device"
        elif how != "exit":
            status, detail = CUT, f"stopped after {secs:.0f} s (rows so far in check.log)"
        else:
            status, detail = ("PASS", "rows in check.log") if rc == 0 else ("FAIL", f"rc {rc}")
        results.row("rest", "cuda_benchmark", status, secs, detail)


RUNNERS = {"env": run_env, "test": run_tests, "train": run_train, "bench": run_bench,
           "torch": run_torch, "rest": run_rest}


# ---------------------------------------------------------------- the plan

def part_budgets(args):
    budgets = {p: b for p, b, _ in PARTS}
    for spec in args.part_budget:
        part, _, secs = spec.partition("=")
        if part not in budgets or not secs:
            raise SystemExit(f"device_check: error: --part_budget={spec}: want PART=SECONDS, "
                             f"PART one of {', '.join(PART_NAMES)}")
        budgets[part] = float(secs)
    return budgets


def plan_items(ctx):
    """{part: [(name, limit text)]} of everything the parts could run, in
    order, without running anything."""
    a = ctx.args
    out = {"env": [("python", "probes <= %.0f s in all" % device_env.PYTHON_SECONDS),
                   ("libraries", "search <= %.0f s" % device_env.SEARCH_SECONDS), ("gpu", "")]}
    out["test"] = [(i.name, f"<= {i.timeout:.0f} s") for i in test_items(ctx)]
    out["train"] = [(i.name, f"<= {i.timeout:.0f} s") for i in train_items(ctx)]
    out["bench"] = [(bench_name("mantissa", *r), f"<= {a.bench_timeout:.0f} s")
                    for r in bench_rows(a)]
    out["torch"] = [(bench_name("pytorch", *r), "one process for all, its own deadline")
                    for r in torch_rows(a)]
    rest = []
    hf = hf_item(ctx)
    if hf is not None:
        rest.append((hf.name, f"<= {hf.timeout:.0f} s"))
    rest += [(i.name, f"<= {i.timeout:.0f} s, where compute-sanitizer is found")
             for i in memcheck_items(ctx, find_sanitizer())]
    rest.append(("cuda_benchmark", "what is left"))
    out["rest"] = rest
    return out


def schedule(args, wanted, items):
    """[(part, budget, start, end)] of the parts that have something to run
    (env always), each ending by its cumulative deadline, capped at the
    budget."""
    budgets = part_budgets(args)
    out, at = [], 0.0
    for part in PART_NAMES:
        if part != "env" and not any(wanted(part, n) for n, _ in items[part]):
            continue
        end = min(at + budgets[part], args.budget)
        out.append((part, budgets[part], at, end))
        at = end
    return out


def plan_text(args, wanted, items):
    sched = schedule(args, wanted, items)
    descr = {p: d for p, _, d in PARTS}
    workers = {"test": args.workers, "train": args.train_workers}
    total = sched[-1][3] if sched else 0.0
    lines = [f"Device check plan (nothing was run): {len(sched)} parts in priority order, "
             f"--budget={args.budget:.0f} s (the device tool's timeout_s {TOOL_TIMEOUT} less "
             f"{TOOL_TIMEOUT - args.budget:.0f} s for the summary and the exit).",
             "A part ends by its deadline ('to'); time it leaves goes to the parts after it. An "
             "item still running at its part's deadline is killed with everything it started and "
             "reads CUT, as does one that could not start; a cut is not a failure.", "",
             f"{'from':>5} {'to':>5} {'budget':>6}  part"]
    for part, budget, start, end in sched:
        names = [(n, lim) for n, lim in items[part] if wanted(part, n)]
        how = (f", {workers[part]} at a time" if part in workers and len(names) > 1 else "")
        if part == "rest" and any(n.startswith("memcheck ") for n, _ in names):
            how = f", memcheck runs {args.workers} at a time"
        short = "" if end - start >= budget else f" (cut to {end - start:.0f} s by --budget)"
        lines.append(f"{start:5.0f} {end:5.0f} {budget:6.0f}  {part}: {descr[part]}; "
                     f"{len(names)} items{how}{short}")
        for n, lim in names:
            lines.append(f"{'':20}{n}{'  (' + lim + ')' if lim else ''}")
    lines += ["", f"total: {total:.0f} s (budget {args.budget:.0f} s; device tool timeout_s "
                  f"{TOOL_TIMEOUT})"]
    return "\n".join(lines)


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


PART_TITLES = {"env": "Environment", "test": "GPU tests", "train": "train --device=cuda",
               "bench": "Mantissa benchmark rows", "torch": "PyTorch benchmark rows",
               "rest": "HF export check, compute-sanitizer memcheck, cuda_benchmark"}


def status_counts(results):
    counts = {}
    for r in last_rows(results.rows).values():
        status = "RUNNING" if r["status"] == "STARTED" else r["status"]
        counts[status] = counts.get(status, 0) + 1
    return counts


def summary_lines(results, extra=None):
    last = last_rows(results.rows)
    counts = status_counts(results)
    out = list(results.header_lines)
    out += ["", "Items: " + (", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "none yet")
            + f" ({time.time() - results.t0:.0f} s since the start)."]
    if counts.get(CUT):
        out.append("CUT = stopped at, or not started before, its part's deadline: not a failure; "
                   "`--rerun-failed=results.tsv` runs these again.")
    if counts.get("RUNNING"):
        out.append("RUNNING = started and not ended: the run was cut (or is still going) there.")
    for part in PART_NAMES:
        these = [r for r in last.values() if r["part"] == part]
        if not these:
            continue
        timing = ""
        if part in results.part_times:
            budget, deadline, ended = results.part_times[part]
            timing = (f" (budget {budget:.0f} s, deadline {deadline:.0f} s"
                      + (f", ended at {ended:.0f} s)" if ended is not None else ")"))
        out += ["", f"## {PART_TITLES[part]}{timing}", "",
                "| item | result | time | detail |", "|---|---|---|---|"]
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
    p.add_argument("--plan", action="store_true", help="print the plan and run nothing")
    p.add_argument("--budget", type=float, default=BUDGET,
                   help="seconds for the whole run, parts included (a rerun gives its own)")
    p.add_argument("--part_budget", action="append", default=[], metavar="PART=S",
                   help="one part's budget (repeatable); parts: " + ", ".join(PART_NAMES))
    p.add_argument("--parts", default=",".join(PART_NAMES),
                   help="the parts to run (env always runs)")
    p.add_argument("--rerun-failed", dest="rerun_failed", default="",
                   help="an earlier run's results.tsv: run only what it did not pass or skip")
    p.add_argument("--only", default="", help="a regular expression over item names")
    p.add_argument("--workers", type=int, default=6, help="tests and memcheck runs at a time")
    p.add_argument("--train_workers", type=int, default=4, help="train runs at a time")
    p.add_argument("--test_timeout", type=float, default=120)
    p.add_argument("--train_timeout", type=float, default=60)
    p.add_argument("--sanitizer_timeout", type=float, default=90)
    p.add_argument("--bench_timeout", type=float, default=40)
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
    p.add_argument("--torch_python", default="",
                   help="the interpreter for PyTorch's side ('' = find one)")
    p.add_argument("--search_roots", default="",
                   help="comma-separated folders searched for interpreters and libraries "
                   "('' = " + ",".join(device_env.SEARCH_ROOTS) + ")")
    p.add_argument("--print-env", action="store_true", dest="print_env")
    args = p.parse_args(argv)
    unknown = [x for x in args.parts.split(",") if x and x not in PART_NAMES]
    if unknown:
        p.error(f"--parts: unknown part {', '.join(unknown)} (parts: {', '.join(PART_NAMES)})")
    return args


def make_wanted(args):
    if args.rerun_failed and not os.path.exists(args.rerun_failed):
        raise SystemExit(f"device_check: error: --rerun-failed: no file {args.rerun_failed}")
    earlier = last_rows(read_tsv(args.rerun_failed)) if args.rerun_failed else {}
    pattern = re.compile(args.only) if args.only else None
    parts = set(args.parts.split(",")) | {"env"}

    def wanted(part, name):
        if part not in parts:
            return False
        if part != "env" and pattern is not None and not pattern.search(name):
            return False
        r = earlier.get((part, name))
        return r is None or r["status"] not in DONE
    return wanted, earlier


def plan_ctx(args):
    """A context for listing items without looking at the machine."""
    ctx = Ctx()
    ctx.args = args
    ctx.gpu, ctx.gpu_name, ctx.libs, ctx.python = "", "", {}, None
    ctx.work = "<work>"
    ctx.shard = "<work>/tokens.bin"
    return ctx


def print_env(args):
    lines = []
    roots = args.search_roots.split(",") if args.search_roots else device_env.SEARCH_ROOTS
    python = device_env.choose_python(lines, roots, only=args.torch_python)
    ld_dirs, _ = device_env.discover(lines, BUNDLE, python, roots)
    env = bundle_env(ld_dirs)
    for k in ("LD_LIBRARY_PATH", "RUNFILES_DIR", "TEST_SRCDIR", "TEST_WORKSPACE",
              "MANTISSA_DIGITS_CSV"):
        print(f"export {k}='{env[k]}'")
    if python:
        print(f"export MANTISSA_TORCH_PYTHON='{python['executable']}'")
    for l in lines:
        print("echo 'env.sh: " + l.replace("'", "") + "' >&2")
    return 0


def main(argv):
    t0 = time.time()
    args = parse_args(argv)
    if args.print_env:
        return print_env(args)
    wanted, earlier = make_wanted(args)
    if args.plan:
        print(plan_text(args, wanted, plan_items(plan_ctx(args))))
        return 0

    # A copy that lost its mode bits (e.g. carried between machines) still runs.
    for f in glob.glob(os.path.join(BUNDLE, "bin", "*")):
        if not os.access(f, os.X_OK):
            os.chmod(f, 0o755)
    os.makedirs(args.results, exist_ok=True)
    ctx = Ctx()
    ctx.args = args
    ctx.gpu = visible_gpu()
    ctx.work = tempfile.mkdtemp(prefix="mantissa_device_check.")
    ctx.shard = os.path.join(ctx.work, "tokens.bin")
    sched = schedule(args, wanted, plan_items(plan_ctx(args)))
    deadlines = {part: t0 + end for part, _, _, end in sched}

    # environment.txt: the interpreter and every library path first, then
    # the rest as it is read.
    env_path = os.path.join(args.results, "environment.txt")
    head = find_environment(ctx, args, deadlines["env"])
    with open(env_path, "w") as f:
        f.write("\n".join(head) + "\n")
    tail = environment_tail(ctx)
    with open(env_path, "a") as f:
        f.write("\n".join(tail) + "\n")
    print("\n".join(head), flush=True)

    header = ["# Mantissa device check", "",
              f"GPU: {ctx.gpu_name or 'none'}; parts {', '.join(p for p, _, _, _ in sched)}; "
              f"budget {args.budget:.0f} s; started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; "
              "interpreter, libraries and versions: environment.txt; every output line: "
              "check.log"]
    if args.rerun_failed:
        header.append(f"Rerun of what {args.rerun_failed} did not pass or skip; its other rows "
                      "are copied in (time_s 0, detail 'earlier run: ...').")
    results = Results(args.results, t0, header)
    results.datasheet = datasheet_for(ctx)
    for (part, name), r in earlier.items():
        if r["status"] in DONE:
            results.row(part, name, r["status"], float(r["seconds"] or 0),
                        "earlier run: " + r["detail"], at=0)
    ctx.runner = Runner(results)
    subprocess.run([sys.executable, os.path.join(HERE, "make_token_shard.py"), ctx.shard],
                   check=True)
    timeline = []
    try:
        for part, budget, _, end in sched:
            results.part_times[part] = (budget, end, None)
            RUNNERS[part](ctx, results, deadlines[part], wanted)
            ended = time.time() - t0
            results.part_times[part] = (budget, end, ended)
            timeline.append(f"{part} ended at {ended:.0f} s (deadline {end:.0f})")
            print(f"device check: {part} ended at {ended:.0f} s (deadline {end:.0f} s)",
                  flush=True)
    finally:
        ctx.runner.kill_all()
    text = results.write_summary([f"Done: {'; '.join(timeline)}; total {time.time() - t0:.0f} s."])
    results.close()
    shutil.rmtree(ctx.work, ignore_errors=True)
    print("\n" + text, flush=True)
    counts = status_counts(results)
    if any(counts.get(s) for s in BAD):
        return 1
    return 3 if counts.get(CUT) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
