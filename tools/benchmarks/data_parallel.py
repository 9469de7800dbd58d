#!/usr/bin/env python3
"""Data-parallel scaling on the CPU: 1 rank x 1 thread against N ranks x 1 thread.

Trains the 8-layer GPT (8 heads, d512, T256, batch 8 per rank) in fp32 with
the train binary, once alone and once under `mpirun -np N` (each rank one
thread, batch 8: the global batch grows with N, as in data parallelism),
interleaved per repeat so a drift in the machine's load hits both alike; the
load average is printed before every repeat. Per configuration, the median
over repeats of each run's median step rate (the first --warmup steps left
out), and for the N-rank runs the time per step rank 0 spent exchanging
gradients (the trainer's "gradient exchange" phase: the bucketed
all-reduces, including any wait for a slower rank).

  tools/bazel run //tools/benchmarks:data_parallel -- --repeats=3 [--zero]

--zero adds the N ranks under --zero_stage=1 (ZeRO-1: sharded masters and
optimizer state, a broadcast of each rank's working weights per step).
--overlap adds the N ranks with --exchange_in_backward=off: every bucket
exchanged after backward, against the default, where each bucket's
exchange is started as soon as backward has finished it and runs while
backward computes the rest (the backend's started collectives); the
"gradient exchange" time is then what backward did not hide.

Scaling efficiency = tokens/s(N ranks) / (N x tokens/s(1 rank)); the goal
is >= 85% for N = 2 on a quiet 2-core machine (docs/performance.md, "Data
parallel"). Other work on the machine takes cores from the ranks: read the
load average beside the number. Exit status 1 when a run fails.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from tools.benchmarks import cpu_side_by_side as side

GPT8 = "n_layer=8,n_head=8,d_model=512,seq_len=256"
SEQ_LEN = 256
BATCH = 8


def label(config):
    if config == 1:
        return "1 rank  x 1 thread"
    if isinstance(config, int):
        return f"{config} ranks x 1 thread"
    if config[1] == "zero1":
        return f"{config[0]} ranks x 1 thread, ZeRO-1"
    return f"{config[0]} ranks x 1 thread, exchange after backward"


def loadavg():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def write_text(path):
    """A small English-like corpus (the text dataset trains on its bytes)."""
    words = ("the quick brown fox jumps over the lazy dog while a mixed precision "
             "trainer averages its gradients across ranks").split()
    with open(path, "w") as f:
        for i in range(20000):
            f.write(" ".join(words[(i + k) % len(words)] for k in range(9)) + f" {i}.\n")


def mpirun(ranks):
    cmd = ["mpirun", "-np", str(ranks)]
    if (os.cpu_count() or 1) < ranks:
        cmd.append("--oversubscribe")
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def measure(train, config, a, text, tmp, log):
    """(tokens/s, gradient exchange seconds per step or None) of one run.

    `config`: a rank count, (ranks, "zero1") for ZeRO-1, or (ranks, "after")
    for --exchange_in_backward=off.
    """
    ranks, variant = (config, "") if isinstance(config, int) else config
    jsonl = os.path.join(tmp, f"run_{ranks}{variant}.jsonl")
    if os.path.exists(jsonl):
        os.remove(jsonl)
    cmd = ([] if ranks == 1 else mpirun(ranks)) + [
        train, "--model=gpt2", f"--model_options={GPT8}", "--dataset=text",
        f"--text_path={text}", f"--cache_dir={tmp}/cache", f"--seq_len={SEQ_LEN}",
        f"--batch_size={BATCH}", f"--steps={a.steps}", "--precision=fp32",
        "--backend_options=threads=1", "--progress=none", "--checkpoint_dir=none",
        "--eval_every=0", "--eval_batches=1", "--log_every=1", f"--metrics_jsonl={jsonl}"] + {
            "": [], "zero1": ["--zero_stage=1"], "after": ["--exchange_in_backward=off"]}[variant]
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    log.write(" ".join(cmd) + "\n" + r.stdout + "\n")
    if r.returncode != 0:
        print(f"mantissa: error: the {ranks}-rank run failed (exit {r.returncode}); "
              f"its output: {log.name}")
        return None, None
    rates, exchange = [], None
    with open(jsonl) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "train" and rec["step"] > a.warmup:
                rates.append(rec["tokens_per_second"])
            elif rec.get("type") == "summary":
                seconds = rec.get("phase_seconds", {}).get("gradient exchange")
                if seconds is not None:
                    exchange = seconds / rec["steps"]
    return (statistics.median(rates) if rates else None), exchange


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=2, help="ranks of the data-parallel run")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=8, help="steps per run")
    p.add_argument("--warmup", type=int, default=2, help="first steps left out of the rate")
    p.add_argument("--zero", action="store_true",
                   help="also run the N ranks with --zero_stage=1 (ZeRO-1)")
    p.add_argument("--overlap", action="store_true",
                   help="also run the N ranks with --exchange_in_backward=off")
    a = p.parse_args()
    if a.ranks < 2 or a.steps <= a.warmup:
        print("mantissa: error: need --ranks >= 2 and --steps > --warmup")
        return 1
    train = side.runfile("trainer/cli/train")
    if not train:
        print("mantissa: error: the train binary is not in this target's runfiles")
        return 1
    # The ranks find their plugins in this target's runfiles tree (mpirun
    # passes the environment on to the ranks it starts here).
    os.environ.update(side.with_runfiles_dir(dict(os.environ)))
    configs = ((1, a.ranks) + (((a.ranks, "zero1"),) if a.zero else ()) +
               (((a.ranks, "after"),) if a.overlap else ()))
    rates = {c: [] for c in configs}
    exchanges = {c: [] for c in configs}
    with tempfile.TemporaryDirectory() as tmp, open(os.path.join(tmp, "runs.log"), "w") as log:
        text = os.path.join(tmp, "corpus.txt")
        write_text(text)
        print(f"8-layer GPT ({GPT8}), fp32, batch {BATCH} x T{SEQ_LEN} per rank, 1 thread per "
              f"rank; {a.steps} steps per run, first {a.warmup} left out")
        for rep in range(a.repeats):
            print(f"repeat {rep + 1}/{a.repeats}: load average {loadavg()}")
            for c in configs:
                rate, ex = measure(train, c, a, text, tmp, log)
                if rate is None:
                    return 1
                rates[c].append(rate)
                if ex is not None:
                    exchanges[c].append(ex)
                print(f"  {label(c)}: {rate:9.1f} tokens/s"
                      + (f", gradient exchange {ex * 1e3:.0f} ms/step" if c != 1 and ex else ""))
    one, many = statistics.median(rates[1]), statistics.median(rates[a.ranks])
    efficiency = many / (a.ranks * one)
    step_seconds = BATCH * SEQ_LEN * a.ranks / many
    exchange = exchanges[a.ranks]
    ex = statistics.median(exchange) if exchange else 0.0
    print(f"\nmedian of {a.repeats}:  1 rank {one:.1f} tokens/s   {a.ranks} ranks {many:.1f} "
          f"tokens/s   speed-up {many / one:.2f}x   scaling efficiency {efficiency:.1%}")
    print(f"collectives: {ex * 1e3:.0f} ms of a {step_seconds * 1e3:.0f} ms step "
          f"({ex / step_seconds:.1%}) in gradient exchange on rank 0")
    print(f"goal >= 85% on a quiet machine: {'met' if efficiency >= 0.85 else 'not met'} "
          f"(load average now {loadavg()})")
    if a.zero:
        z = statistics.median(rates[(a.ranks, "zero1")])
        print(f"ZeRO-1: {z:.1f} tokens/s, {z / many:.1%} of ZeRO-0's on {a.ranks} ranks")
    if a.overlap:
        after = statistics.median(rates[(a.ranks, "after")])
        ex_after = exchanges[(a.ranks, "after")]
        ex_after = statistics.median(ex_after) if ex_after else 0.0
        print(f"exchange in backward (default) {many:.1f} tokens/s, {ex * 1e3:.0f} ms/step "
              f"exposed; after backward {after:.1f} tokens/s, {ex_after * 1e3:.0f} ms/step; "
              f"in backward at {many / after:.1%} of after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
