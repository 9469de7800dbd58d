#!/usr/bin/env python3
"""The CPU backend's speed on a quiet machine and beside CPU-bound competitors.

Trains the MLP (samples/s) and gpt2-tiny (tokens/s) with the backend's
default thread pool (every core, each step on as many as pay: the thread
governor, plugins/backends/cpu/thread_governor.h) and with one thread, first
on the machine as it is, then beside --competitors processes that spin on
the CPU (default: one per core). Conditions and configurations are
interleaved per repeat, so a drift in the machine's own load hits all alike;
the load average is printed before every repeat. Verdicts, on medians and
the range of the repeats:
  busy:  the default must be at least as fast as one thread, or within the
         noise (the two ranges overlap);
  quiet: the default must be faster than one thread.
Exit status 1 when a verdict fails or a run fails.

  tools/bazel run //tools/benchmarks:busy_machine -- --repeats=3

OMP_NUM_THREADS, OMP_WAIT_POLICY and GOMP_SPINCOUNT are removed from the
runs' environment, so "default" is what a user who sets nothing gets.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from tools.benchmarks import cpu_side_by_side as side

OMP_VARIABLES = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_DYNAMIC")
CONFIGS = ("default", "1 thread")


def start_competitors(n):
    """n processes that spin on the CPU until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def measure(workload, config, bench, mlp_bench, a, env, log):
    """Samples/s (mlp) or tokens/s (gpt2-tiny) of one run, or None."""
    run_env = dict(env)
    if config == "1 thread":
        run_env["OMP_NUM_THREADS"] = "1"
    if workload == "mlp":
        return side.mantissa_mlp(mlp_bench, "fp32", a.mlp_steps, run_env, log)
    layers, heads, dim, seq, batch = side.WORKLOADS["gpt2-tiny"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.csv")
        side.run([bench, f"--bench_model_options=n_layer={layers},n_head={heads},"
                  f"d_model={dim},seq_len={seq},vocab=256", f"--bench_seq_len={seq}",
                  f"--bench_batches={batch}", "--bench_checkpointing=off",
                  "--bench_precisions=fp32", f"--bench_steps={a.gpt_steps}",
                  "--bench_warmup_steps=2", "--bench_gemm_size=64", "--bench_python=",
                  f"--bench_csv={out}"], run_env, log)
        got = side.tokens_per_s(out, "mantissa", "fp32")
    return got[0] if got else None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workloads", default="mlp,gpt2-tiny")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--competitors", type=int, default=os.cpu_count() or 2,
                   help="CPU-bound processes beside the busy runs (default: one per core)")
    p.add_argument("--gpt_steps", type=int, default=150, help="timed steps of a gpt2-tiny run")
    p.add_argument("--mlp_steps", type=int, default=100, help="steps of an MLP run")
    p.add_argument("--log", default="", help="full output of every run (default: a temp file)")
    a = p.parse_args()

    bench = side.runfile("tools/benchmarks/gpt2_benchmark")
    mlp_bench = side.runfile("tools/benchmarks/precision_benchmark")
    if not bench or not mlp_bench:
        print("mantissa: error: gpt2_benchmark or precision_benchmark not found; "
              "run through tools/bazel run //tools/benchmarks:busy_machine")
        return 1
    workloads = a.workloads.split(",")
    for w in workloads:
        if w not in ("mlp", "gpt2-tiny"):
            print(f"mantissa: error: --workloads: unknown workload '{w}' (expected mlp, gpt2-tiny)")
            return 1
    env = side.with_runfiles_dir({k: v for k, v in os.environ.items() if k not in OMP_VARIABLES})
    log_path = a.log or tempfile.mkstemp(prefix="busy_machine_", suffix=".log")[1]
    print(f"{os.cpu_count()} logical CPUs; busy = beside {a.competitors} spinning processes; "
          f"{a.repeats} interleaved repeats, medians; log: {log_path}")

    results = {}  # (condition, workload, config) -> [rates]
    with open(log_path, "w") as log:
        for rep in range(a.repeats):
            for condition in ("quiet", "busy"):
                competitors = start_competitors(a.competitors) if condition == "busy" else []
                try:
                    if competitors:
                        time.sleep(1.0)  # let them take the cores
                    print("repeat %d %s: load average %.2f %.2f %.2f" %
                          ((rep + 1, condition) + os.getloadavg()), flush=True)
                    for w in workloads:
                        for config in CONFIGS:
                            got = measure(w, config, bench, mlp_bench, a, env, log)
                            if got:
                                results.setdefault((condition, w, config), []).append(got)
                finally:
                    stop(competitors)
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    print()
    print("| condition | workload | unit | default | 1 thread | default / 1 thread | verdict |")
    print("|---|---|---|---|---|---|---|")
    failed = False
    for condition in ("quiet", "busy"):
        for w in workloads:
            unit = "samples/s" if w == "mlp" else "tokens/s"
            d_rates = results.get((condition, w, "default"))
            o_rates = results.get((condition, w, "1 thread"))
            if not d_rates or not o_rates:
                print(f"| {condition} | {w} | {unit} | - | - | - | a run failed (see log) |")
                failed = True
                continue
            dm, om = statistics.median(d_rates), statistics.median(o_rates)
            ratio = dm / om
            spread = lambda r: "%.0f (%.0f-%.0f)" % (statistics.median(r), min(r), max(r))
            if condition == "busy":
                overlap = max(d_rates) >= min(o_rates)
                ok = ratio >= 1.0 or overlap
                verdict = ("ok" if ratio >= 1.0 else "ok (within the noise)") if ok \
                    else "SLOWER than 1 thread"
            else:
                ok = ratio > 1.0 or (os.cpu_count() or 1) == 1
                verdict = "ok" if ok else "no faster than 1 thread"
            failed |= not ok
            print(f"| {condition} | {w} | {unit} | {spread(d_rates)} | {spread(o_rates)} "
                  f"| {ratio:.2f}x | {verdict} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
