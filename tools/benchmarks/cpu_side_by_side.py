#!/usr/bin/env python3
"""Mantissa's CPU backend and PyTorch (eager, and compiled) on the CPU, side by side.

For each workload and precision, the two frameworks train the same model
on the same shapes, one after the other, and the pair is repeated
(interleaved: mantissa, pytorch, mantissa, pytorch, ...), so a change in the
machine's load hits both alike. Prints the CPU and its ISA, the load average
before every repeat, the median rate of each side (samples/s for the MLP,
tokens/s for the GPTs) and the ratio Mantissa / PyTorch per PyTorch engine
(--torch_engines: eager, compiled = torch.compile with Inductor), Mantissa's
MFU against the GEMM peak its benchmark measured on oneDNN, and (--scaling)
Mantissa's speed-up from 1 to --threads threads on one workload in fp32.

  tools/bazel run //tools/benchmarks:cpu_side_by_side -- \
      --python=$HOME/torchenv/bin/python --threads=2 --repeats=3 \
      --torch_engines=eager,compiled

The workload "conv" is a second table: ResNet-50's convolution layers
(cnn_benchmark's conv table beside conv_torch_bench.py: F.conv2d,
conv2d_input, conv2d_weight on the same NCHW tensors), TFLOP/s per pass,
interleaved the same way. --peak=N first measures the bf16 and fp32 matmul
peak with oneDNN alone (onednn_bench, oneDNN's own threads: the best of N^3
with plain and pre-packed B and of the 8-layer GPT's four GEMM shapes, which
oneDNN 2.6 runs faster than 2048^3 on AMX) and torch.mm's at N^3, and gives
the GPTs' MFU against oneDNN's.

PyTorch is optional (never installed by tools/bazel, never run in CI):
  python3 -m venv ~/torchenv && ~/torchenv/bin/pip install torch
Without it the PyTorch column says "skipped".

Workloads (docs/performance.md):
  mlp        64-1024-1024-10 (ReLU) on digits, batch 256 (precision_benchmark
             and mlp_torch_bench.py)
  gpt2-tiny  2 layers, 4 heads, d64, T64, batch 16 (gpt2_benchmark and
             gpt2_torch_bench.py, as the two below)
  gpt-8      8 layers, 8 heads, d512, T256, batch 8
  conv       ResNet-50's conv layers, batch --conv_batch (cnn_benchmark and
             conv_torch_bench.py)
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile

MLP = ("mlp", "hidden=1024:1024", 256)  # name, model options, batch
CONV = "conv"
CONV_PASSES = ["fwd", "bwd-data", "bwd-filter"]
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


def with_runfiles_dir(env):
    """`env` with RUNFILES_DIR set to this script's runfiles tree (unless set).

    The benchmarks find their plugins in the runfiles tree; bazel builds none
    of their own for data dependencies, so point them at ours.
    """
    d = os.path.dirname(os.path.abspath(__file__))
    while d != "/" and not d.endswith(".runfiles"):
        d = os.path.dirname(d)
    if "RUNFILES_DIR" not in env and d.endswith(".runfiles"):
        env["RUNFILES_DIR"] = d
    return env


def tokens_per_s(csv_path, framework, precision):
    """(tokens/s, GEMM peak TFLOP/s, MFU against it) of a gpt2 CSV row."""
    if not os.path.exists(csv_path):
        return None
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            if (row["framework"] == framework and row["precision"] == precision
                    and row["status"] == "ok"):
                return (float(row["tokens_per_s"]), row.get("gemm_tflops", ""),
                        row.get("mfu_measured", ""))
    return None


def mantissa_mlp(bench, prec, steps, env, log):
    """Samples/s of precision_benchmark's row for `prec` (its stdout table)."""
    r = subprocess.run([bench, f"--bench_model_options={MLP[1]}",
                        f"--bench_batch_size={MLP[2]}", f"--bench_steps={steps}",
                        f"--bench_precisions={prec}"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    log.write(f"{bench} {prec}\n" + r.stdout + "\n")
    for line in r.stdout.splitlines():
        f = line.split()
        if r.returncode == 0 and len(f) > 1 and f[0] == prec:
            return float(f[1])
    return None


def torch_mlp(python, script, prec, steps, warmup, engine, env, log):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.csv")
        run([python, script, f"--hidden={MLP[1].split('=')[1]}", f"--batch={MLP[2]}",
             f"--steps={steps}", f"--warmup={warmup}", f"--precisions={prec}",
             f"--compile={'on' if engine == 'compiled' else 'off'}", f"--csv={out}"], env, log)
        if os.path.exists(out):
            with open(out) as f:
                for row in csv.DictReader(f):
                    if row["precision"] == prec and row["status"] == "ok":
                        return float(row["samples_per_s"])
    return None


def mantissa_conv(bench, prec, batch, iters, env, log):
    """{(layer, pass): TFLOP/s} of cnn_benchmark's conv table for `prec`."""
    r = subprocess.run([bench, f"--bench_precisions={prec}", f"--bench_conv_batch={batch}",
                        f"--bench_conv_iters={iters}", "--bench_tables=conv"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log.write(f"{bench} {prec}\n" + r.stdout + "\n")
    got = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if r.returncode != 0 or len(f) < 2 or f[-1].count("/") != 2:
            continue
        name = " ".join(f[:-1])
        try:
            for pass_name, v in zip(CONV_PASSES, f[-1].split("/")):
                got[(name, pass_name)] = float(v)
        except ValueError:
            continue
    return got


def torch_rows(python, script, flags, env, log):
    """{(precision, layer, pass): TFLOP/s} of conv_torch_bench.py's rows."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.csv")
        run([python, script] + flags + [f"--csv={out}"], env, log)
        got = {}
        if os.path.exists(out):
            with open(out) as f:
                for row in csv.DictReader(f):
                    if row["status"] == "ok":
                        got[(row["precision"], row["layer"], row["pass"])] = float(row["tflops"])
        return got


def onednn_peaks(bench, size, env, log):
    """{precision: best TFLOP/s} of onednn_bench's matmuls: N^3 (plain or packed B) and
    the 8-layer GPT's shapes."""
    r = subprocess.run([bench, "--what=matmul", f"--size={size}", "--types=bf16,f32"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log.write(f"{bench}\n" + r.stdout + "\n")
    peaks = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0] == "matmul" and "unimplemented" not in f:
            prec = "fp32" if f[1] == "f32" else f[1]
            peaks[prec] = max(peaks.get(prec, 0.0), float(f[-1]))
    return peaks, (r.stdout.splitlines() or ["?"])[0]


def isa_line():
    """The CPU's vector ISA extensions that matter here, from /proc/cpuinfo."""
    wanted = ["avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16",
              "amx_tile"]
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    return " ".join(w for w in wanted if w in flags) or "no AVX2"


def run(cmd, env, log):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    log.write(" ".join(cmd) + "\n" + r.stdout + "\n")
    return r.returncode


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--python", default="python3", help="a Python with torch; '' = skip")
    p.add_argument("--workloads", default="mlp,gpt2-tiny,gpt-8,conv")
    p.add_argument("--torch_engines", default="eager",
                   help="PyTorch engines, comma-separated: eager, compiled (torch.compile)")
    p.add_argument("--conv_batch", type=int, default=8, help="images per conv call")
    p.add_argument("--conv_iters", type=int, default=5, help="timed calls per conv pass")
    p.add_argument("--peak", type=int, default=2048,
                   help="N of the N^3 matmul peak (oneDNN alone and torch.mm); 0 = skip")
    p.add_argument("--precisions", default="fp32,tf32,bf16,fp16")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=10, help="timed steps of a GPT row")
    p.add_argument("--mlp_steps", type=int, default=100, help="steps of an MLP row")
    p.add_argument("--scaling", default="gpt-8",
                   help="workload also run on 1 thread in fp32 ('' = none)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--log", default="", help="full output of every run (default: a temp file)")
    a = p.parse_args()

    bench = runfile("tools/benchmarks/gpt2_benchmark")
    mlp_bench = runfile("tools/benchmarks/precision_benchmark")
    cnn_bench = runfile("tools/benchmarks/cnn_benchmark")
    peak_bench = runfile("tools/benchmarks/onednn_bench")
    torch_script = runfile("tools/benchmarks/gpt2_torch_bench.py")
    torch_mlp_script = runfile("tools/benchmarks/mlp_torch_bench.py")
    torch_conv_script = runfile("tools/benchmarks/conv_torch_bench.py")
    if not bench or not mlp_bench or not cnn_bench:
        print("mantissa: error: gpt2_benchmark, precision_benchmark or cnn_benchmark not "
              "found; run through tools/bazel run")
        return 1
    for w in a.workloads.split(","):
        if w not in (MLP[0], CONV) and w not in WORKLOADS:
            print(f"mantissa: error: --workloads: unknown workload '{w}' "
                  f"(expected {MLP[0]}, {', '.join(WORKLOADS)}, {CONV})")
            return 1
    engines = [e for e in a.torch_engines.split(",") if e]
    for e in engines:
        if e not in ("eager", "compiled"):
            print(f"mantissa: error: --torch_engines: unknown engine '{e}' "
                  "(expected eager, compiled)")
            return 1
    env = with_runfiles_dir(dict(os.environ, OMP_NUM_THREADS=str(a.threads)))
    log_path = a.log or tempfile.mkstemp(prefix="cpu_side_by_side_", suffix=".log")[1]
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"CPU: {model}, {os.cpu_count()} logical CPUs ({isa_line()}); {a.threads} threads "
          f"each; {a.repeats} interleaved repeats, medians; PyTorch engines: "
          f"{', '.join(engines) if a.python else 'none'}; log: {log_path}")
    # The kernels oneDNN picks: one untimed step per workload and precision
    # with ONEDNN_VERBOSE=1 (its per-call lines would slow the timed runs).
    kernels = set()
    for w in a.workloads.split(","):
        if w in (MLP[0], CONV):
            continue  # the MLP's GEMMs are the GPTs' kernels; convs: below
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
    if any(w in WORKLOADS for w in a.workloads.split(",")):
        print("oneDNN kernels: " + ("; ".join(sorted(kernels)) if kernels else
                                    "none (gemm=reference, or oneDNN not loaded)"))
    results = {}  # (workload, precision, framework) -> [samples/s or tokens/s]
    peaks = {}
    mfus = {}  # (workload, precision) -> [Mantissa MFU against its measured GEMM peak]
    flops_per_token = {}  # workload -> the GPT's training FLOPs per token
    conv = {}  # (precision, layer, pass, framework) -> [TFLOP/s]
    onednn_peak, torch_peak, onednn_version = {}, {}, ""
    with open(log_path, "w") as log:
        if a.peak > 0 and peak_bench:
            print("peak: load average %.2f %.2f %.2f" % os.getloadavg(), flush=True)
            onednn_peak, onednn_version = onednn_peaks(peak_bench, a.peak, env, log)
            if a.python and torch_conv_script:
                rows = torch_rows(a.python, torch_conv_script,
                                  ["--precisions=", f"--matmul={a.peak}"], env, log)
                torch_peak = {p: v for (p, _, _), v in rows.items()}
            print(f"matmul peak (best of {a.peak}^3 and gpt-8's shapes), TFLOP/s: "
                  f"{onednn_version} " +
                  ", ".join(f"{p} {v:.3f}" for p, v in sorted(onednn_peak.items())) +
                  f"; torch.mm {a.peak}^3 " + (", ".join(f"{p} {v:.3f}" for p, v in sorted(torch_peak.items()))
                                   or "skipped"), flush=True)
        for rep in range(a.repeats):
            print("repeat %d: load average %.2f %.2f %.2f" % ((rep + 1,) + os.getloadavg()),
                  flush=True)
            for w in a.workloads.split(","):
                if w == CONV:
                    for prec in a.precisions.split(","):
                        got = mantissa_conv(cnn_bench, prec, a.conv_batch, a.conv_iters, env,
                                            log)
                        for (layer, pass_name), v in got.items():
                            conv.setdefault((prec, layer, pass_name, "mantissa"), []).append(v)
                        if a.python and torch_conv_script:
                            got = torch_rows(a.python, torch_conv_script,
                                             [f"--precisions={prec}", f"--batch={a.conv_batch}",
                                              f"--iters={a.conv_iters}"], env, log)
                            for (p, layer, pass_name), v in got.items():
                                conv.setdefault((p, layer, pass_name, "pytorch"), []).append(v)
                    continue
                if w == MLP[0]:
                    for prec in a.precisions.split(","):
                        got = mantissa_mlp(mlp_bench, prec, a.mlp_steps, env, log)
                        if got:
                            results.setdefault((w, prec, "mantissa"), []).append(got)
                        for engine in engines if a.python and torch_mlp_script else []:
                            got = torch_mlp(a.python, torch_mlp_script, prec, a.mlp_steps,
                                            5, engine, env, log)
                            if got:
                                results.setdefault((w, prec, "pytorch-" + engine),
                                                   []).append(got)
                    continue
                layers, heads, dim, seq, batch = WORKLOADS[w]
                threads = [a.threads] + ([1] if w == a.scaling and a.threads > 1 else [])
                for prec in a.precisions.split(","):
                  for n in threads if prec == "fp32" else [a.threads]:
                    run_env = dict(env, OMP_NUM_THREADS=str(n))
                    with tempfile.TemporaryDirectory() as tmp:
                        out = os.path.join(tmp, "rows.csv")
                        run([bench, f"--bench_model_options=n_layer={layers},n_head={heads},"
                             f"d_model={dim},seq_len={seq},vocab=256",
                             f"--bench_seq_len={seq}", f"--bench_batches={batch}",
                             "--bench_checkpointing=off", f"--bench_precisions={prec}",
                             f"--bench_steps={a.steps}", f"--bench_warmup_steps={a.warmup}",
                             "--bench_python=", f"--bench_csv={out}"], run_env, log)
                        got = tokens_per_s(out, "mantissa", prec)
                        if got and n != a.threads:
                            results.setdefault((w, prec, "mantissa1"), []).append(got[0])
                            continue  # the 1-thread run has no PyTorch partner
                        if got:
                            results.setdefault((w, prec, "mantissa"), []).append(got[0])
                            peaks[prec] = got[1]
                            if got[2]:
                                mfus.setdefault((w, prec), []).append(float(got[2]))
                                flops_per_token[w] = (float(got[2]) * float(got[1]) * 1e12 /
                                                      got[0])
                        for engine in engines if a.python and torch_script else []:
                            if os.path.exists(out):
                                os.remove(out)
                            run([a.python, torch_script, f"--layers={layers}",
                                 f"--heads={heads}", f"--dim={dim}", f"--seq={seq}",
                                 "--vocab=256", f"--batches={batch}", f"--steps={a.steps}",
                                 f"--warmup={a.warmup}", "--device=cpu",
                                 f"--precisions={prec}", "--checkpointing=off",
                                 f"--compile={'on' if engine == 'compiled' else 'off'}",
                                 "--gemm_size=0", f"--csv={out}"], env, log)
                            got = tokens_per_s(out, "pytorch", prec)
                            if got:
                                results.setdefault((w, prec, "pytorch-" + engine),
                                                   []).append(got[0])
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    print()
    med = lambda v: statistics.median(v) if v else None
    gpts = [w for w in a.workloads.split(",") if w != CONV]
    if gpts:
        head = "| workload | precision | unit | Mantissa |"
        rule = "|---|---|---|---|"
        for e in engines:
            head += f" PyTorch {e} | Mantissa / {e} |"
            rule += "---|---|"
        head += " Mantissa MFU (its GEMM peak) |" + (" MFU (oneDNN peak) |" if onednn_peak
                                                     else "")
        rule += "---|" + ("---|" if onednn_peak else "")
        print(head)
        print(rule)
    for w in gpts:
        unit = "samples/s" if w == MLP[0] else "tokens/s"
        for prec in a.precisions.split(","):
            m = med(results.get((w, prec, "mantissa")))
            line = f"| {w} | {prec} | {unit} | " + ("%.0f" % m if m else "failed (see log)") + " |"
            for e in engines:
                t = med(results.get((w, prec, "pytorch-" + e)))
                line += (" %.0f |" % t if t else " skipped |") + (
                    " %.2fx |" % (m / t) if m and t else " - |")
            mfu = med(mfus.get((w, prec)))
            line += " %.0f%% |" % (100 * mfu) if mfu else " - |"
            if onednn_peak:
                pk = onednn_peak.get(prec) or onednn_peak.get("fp32" if prec == "tf32" else "")
                fpt = flops_per_token.get(w)
                line += (" %.0f%% |" % (100 * m * fpt / (pk * 1e12)) if m and fpt and pk
                         else " - |")
            print(line)
    if CONV in a.workloads.split(","):
        print(f"\nconv layers, batch {a.conv_batch}, TFLOP/s, Mantissa / PyTorch eager "
              "(medians of the repeats):\n")
        print("| layer | precision | fwd | bwd-data | bwd-filter |")
        print("|---|---|---|---|---|")
        layers = []
        for (p, layer, pass_name, fw) in conv:
            if layer not in layers:
                layers.append(layer)
        for prec in a.precisions.split(","):
            for layer in layers:
                cells = []
                for pass_name in CONV_PASSES:
                    m = med(conv.get((prec, layer, pass_name, "mantissa")))
                    t = med(conv.get((prec, layer, pass_name, "pytorch")))
                    cells.append(("%.3f" % m if m else "failed") + " / " +
                                 ("%.3f" % t if t else "skipped") +
                                 (" = %.2fx" % (m / t) if m and t else ""))
                print(f"| {layer} | {prec} | " + " | ".join(cells) + " |")
    if peaks:
        print("\nMantissa's measured GEMM peak (1024^3 on oneDNN, TFLOP/s): " +
              ", ".join(f"{k} {v}" for k, v in peaks.items()))
    one = results.get((a.scaling, "fp32", "mantissa1"))
    many = results.get((a.scaling, "fp32", "mantissa"))
    if one and many:
        print("Mantissa %s fp32: %d threads %.0f tokens/s, 1 thread %.0f tokens/s: %.2fx" %
              (a.scaling, a.threads, statistics.median(many), statistics.median(one),
               statistics.median(many) / statistics.median(one)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
