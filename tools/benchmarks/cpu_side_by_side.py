#!/usr/bin/env python3
"""Mantissa's CPU backend and PyTorch eager on the CPU, side by side in one run.

For each workload and precision, the two frameworks train the same GPT-2
shaped model on the same shapes, one after the other, and the pair is
repeated (interleaved: mantissa, pytorch, mantissa, pytorch, ...), so a
change in the machine's load hits both alike. Prints the load average before
every repeat, the median tokens/s of each side and the ratio Mantissa /
PyTorch, and the GEMM peak Mantissa's benchmark measured (its MFU column).

  tools/bazel run //tools/benchmarks:cpu_side_by_side -- \
      --python=$HOME/torchenv/bin/python --threads=2 --repeats=3

PyTorch is optional (never installed by tools/bazel, never run in CI):
  python3 -m venv ~/torchenv && ~/torchenv/bin/pip install torch
Without it the PyTorch column says "skipped".

Workloads (docs/performance.md):
  gpt2-tiny  2 layers, 4 heads, d64, T64, batch 16
  gpt-8      8 layers, 8 heads, d512, T256, batch 8
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile

WORKLOADS = {
    # name: (layers, heads, dim, seq, batch)
    "gpt2-tiny": (2, 4, 64, 64, 16),
    "gpt-8": (8, 8, 512, 256, 8),
}


def runfile(rel):
    """Path of a data dependency, in `bazel run`'s runfiles or the source tree."""
    here = os.path.dirname(os.path.abspath(__file__))
    for base in (os.environ.get("RUNFILES_DIR", ""), here + ".runfiles",
                 os.path.join(here, "..", "..")):
        for p in (os.path.join(base, "mantissa", rel), os.path.join(base, rel)):
            if base and os.path.exists(p):
                return p
    return ""


def tokens_per_s(csv_path, framework, precision):
    if not os.path.exists(csv_path):
        return None
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            if (row["framework"] == framework and row["precision"] == precision
                    and row["status"] == "ok"):
                return float(row["tokens_per_s"]), row.get("gemm_tflops", "")
    return None


def run(cmd, env, log):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    log.write(" ".join(cmd) + "\n" + r.stdout + "\n")
    return r.returncode


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--python", default="python3", help="a Python with torch; '' = skip")
    p.add_argument("--workloads", default="gpt2-tiny,gpt-8")
    p.add_argument("--precisions", default="fp32,tf32,bf16,fp16")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--log", default="", help="full output of every run (default: a temp file)")
    a = p.parse_args()

    bench = runfile("tools/benchmarks/gpt2_benchmark")
    torch_script = runfile("tools/benchmarks/gpt2_torch_bench.py")
    if not bench:
        print("mantissa: error: gpt2_benchmark not found; run through tools/bazel run")
        return 1
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    log_path = a.log or tempfile.mkstemp(prefix="cpu_side_by_side_", suffix=".log")[1]
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"CPU: {model}, {os.cpu_count()} logical CPUs; {a.threads} threads each; "
          f"{a.repeats} interleaved repeats, medians; log: {log_path}")
    # The kernels oneDNN picks: one untimed step per workload and precision
    # with ONEDNN_VERBOSE=1 (its per-call lines would slow the timed runs).
    kernels = set()
    for w in a.workloads.split(","):
        layers, heads, dim, seq, batch = WORKLOADS[w]
        for prec in a.precisions.split(","):
            r = subprocess.run(
                [bench, f"--bench_model_options=n_layer={layers},n_head={heads},"
                 f"d_model={dim},seq_len={seq},vocab=256", f"--bench_seq_len={seq}",
                 f"--bench_batches={batch}", "--bench_checkpointing=off",
                 f"--bench_precisions={prec}", "--bench_steps=1", "--bench_warmup_steps=0",
                 "--bench_gemm_size=64", "--bench_python="],
                env=dict(env, ONEDNN_VERBOSE="1"), stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True)
            for line in r.stdout.splitlines():
                f = line.split(",")
                if len(f) > 4 and f[0] == "onednn_verbose" and f[1] == "exec":
                    kernels.add(f"{prec} {f[3]}: {f[4]}")
    print("oneDNN kernels: " + ("; ".join(sorted(kernels)) if kernels else
                                "none (gemm=reference, or oneDNN not loaded)"))
    results = {}  # (workload, precision, framework) -> [tokens/s]
    peaks = {}
    with open(log_path, "w") as log:
        for rep in range(a.repeats):
            print("repeat %d: load average %.2f %.2f %.2f" % ((rep + 1,) + os.getloadavg()),
                  flush=True)
            for w in a.workloads.split(","):
                layers, heads, dim, seq, batch = WORKLOADS[w]
                for prec in a.precisions.split(","):
                    with tempfile.TemporaryDirectory() as tmp:
                        out = os.path.join(tmp, "rows.csv")
                        run([bench, f"--bench_model_options=n_layer={layers},n_head={heads},"
                             f"d_model={dim},seq_len={seq},vocab=256",
                             f"--bench_seq_len={seq}", f"--bench_batches={batch}",
                             "--bench_checkpointing=off", f"--bench_precisions={prec}",
                             f"--bench_steps={a.steps}", f"--bench_warmup_steps={a.warmup}",
                             "--bench_python=", f"--bench_csv={out}"], env, log)
                        got = tokens_per_s(out, "mantissa", prec)
                        if got:
                            results.setdefault((w, prec, "mantissa"), []).append(got[0])
                            peaks[prec] = got[1]
                        if a.python and torch_script:
                            run([a.python, torch_script, f"--layers={layers}",
                                 f"--heads={heads}", f"--dim={dim}", f"--seq={seq}",
                                 "--vocab=256", f"--batches={batch}", f"--steps={a.steps}",
                                 f"--warmup={a.warmup}", "--device=cpu",
                                 f"--precisions={prec}", "--checkpointing=off",
                                 "--gemm_size=0", f"--csv={out}"], env, log)
                            got = tokens_per_s(out, "pytorch", prec)
                            if got:
                                results.setdefault((w, prec, "pytorch"), []).append(got[0])
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    print()
    print("| workload | precision | Mantissa tokens/s | PyTorch tokens/s | Mantissa / PyTorch |")
    print("|---|---|---|---|---|")
    for w in a.workloads.split(","):
        for prec in a.precisions.split(","):
            m = results.get((w, prec, "mantissa"))
            t = results.get((w, prec, "pytorch"))
            ms = "%.0f" % statistics.median(m) if m else "failed (see log)"
            ts = "%.0f" % statistics.median(t) if t else "skipped"
            ratio = ("%.2fx" % (statistics.median(m) / statistics.median(t))) if m and t else "-"
            print(f"| {w} | {prec} | {ms} | {ts} | {ratio} |")
    if peaks:
        print("\nMantissa's measured GEMM peak (1024^3, TFLOP/s): " +
              ", ".join(f"{k} {v}" for k, v in peaks.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
