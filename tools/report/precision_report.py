"""Precision report: trains the same model, data and seed in fp32, tf32,
bf16, fp16 and fp8 on the chosen device, and writes a folder with report.md,
PNG plots (loss curves, throughput, memory by category, the fp16 loss
scale), the plotted data (plots.json, steps.csv, summary.csv) and a verdict
on each claim of the mixed-precision guide as measured on this run.

  tools/bazel run //tools/report:precision_report -- [--out=DIR]
      [--precisions=fp32,tf32,bf16,fp16,fp8] [--loss_tolerance=0.02]
      [--timing_repeats=3 --timing_steps=50] [train flags]

Speed is judged on short timing runs, each precision --timing_repeats times
interleaved (fp32, tf32, bf16, fp16, fp8, fp32, ...), so the load of a busy
machine spreads over every precision: the report shows each one's median
and range, and where the ranges overlap says "too noisy to judge".

fp8 (bf16 storage, FP8 GEMMs) gets the same steps as the others. On the CPU
backend its GEMMs are an exact emulation, several times slower than bf16's:
its loss is worth comparing, its speed is not a measure of FP8 hardware, and
the fp8 verdicts say so. On a GPU without FP8 tensor cores (before sm_89) the
default list leaves fp8 out with the trainer's one-line reason in report.md;
an fp8 asked for with --precisions fails the report there.

Flags this script does not know go to `train` unchanged (--model, --device,
--steps, ...); without any it is the main job (GPT-2 on English text).
"""

import argparse
import csv
import datetime
import json
import os
import platform
import sys
import time

from tools.report import claims as claims_lib
from tools.report import plots
from tools.report import runs as runs_lib


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="precision_report",
                        help="output folder (relative to where bazel run was called)")
    parser.add_argument("--precisions", default="fp32,tf32,bf16,fp16,fp8")
    parser.add_argument("--loss_tolerance", type=float, default=0.02,
                        help="relative gap allowed between tf32's and fp32's (and fp8's and "
                        "bf16's) final eval loss")
    parser.add_argument("--timing_repeats", type=int, default=3,
                        help="timing runs per precision, interleaved (0: time the main runs only)")
    parser.add_argument("--timing_steps", type=int, default=50,
                        help="steps of each timing run")
    args, train_args = parser.parse_known_args(argv)
    for a in train_args:
        if a.startswith("--precision=") or a in ("--bf16", "--fp16", "--tf32"):
            parser.error("%s: the report chooses the precision of each run" % a)
        if a.startswith("--metrics_jsonl=") or a.startswith("--checkpoint_dir="):
            parser.error("%s: the report keeps these under --out" % a)
    args.precisions_given = any(a == "--precisions" or a.startswith("--precisions=")
                                for a in argv)
    out = args.out
    if not os.path.isabs(out):
        out = os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd()), out)
    return args, train_args, out


def write_csvs(runs, out):
    with open(os.path.join(out, "steps.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["precision", "step", "loss", "lr", "loss_scale", "skipped", "grad_norm"])
        for p, run in runs.items():
            for r in run.train:
                w.writerow([p, r["step"], repr(r["loss"]), repr(r["lr"]),
                            repr(r["loss_scale"]), int(r["skipped"]), r["grad_norm"]])
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["precision", "final_train_loss", "final_eval_loss", "eval_accuracy",
                    "throughput", "unit", "train_seconds", "skipped_steps"] +
                   ["peak_bytes_" + c for c in runs_lib.MEMORY_CATEGORIES + ["total"]])
        for p, run in runs.items():
            acc = run.evals[-1]["eval_accuracy"] if run.evals else ""
            w.writerow([p, repr(run.train[-1]["loss"]), repr(run.final_eval_loss()), acc,
                        repr(run.throughput()), run.throughput_unit(),
                        repr(run.train_seconds()), run.summary["skipped_steps"]] +
                       [run.peak_bytes(c) for c in runs_lib.MEMORY_CATEGORIES + ["total"]])


def clock(seconds):
    """"1:05", "1:02:03"."""
    s = int(seconds + 0.5)
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60) if s >= 3600 else \
        "%d:%02d" % (s // 60, s % 60)


class Progress:
    """A line as each training run starts and one as it ends, numbered and
    with the time since the report began: the report takes minutes (the
    main job's, about six on a 2-core CPU), and its runs write to log files."""

    def __init__(self, total):
        self.total, self.started, self.begin = total, 0, time.monotonic()

    def _say(self, text):
        print("precision report: [%d/%d %s] %s" % (
            self.started, self.total, clock(time.monotonic() - self.begin), text), flush=True)

    def run(self, what, log, train):
        """Calls train() (one run, its console in `log`) between the two lines."""
        self.started += 1
        self._say("%s: started (log: %s)" % (what, log))
        t = time.monotonic()
        try:
            result = train()
        except RuntimeError:
            self._say("%s: failed after %.1f s" % (what, time.monotonic() - t))
            raise
        self._say("%s: done in %.1f s" % (what, time.monotonic() - t))
        return result


def timing_runs(precisions, out, train_args, args, progress):
    """{precision: [throughput]} of args.timing_repeats short runs each,
    interleaved; {} when repeats are off."""
    timings = {p: [] for p in precisions}
    if args.timing_repeats <= 0:
        return {}
    extra = ["--steps=%d" % args.timing_steps, "--eval_every=0", "--log_every=1000000"]
    for i in range(args.timing_repeats):
        for p in precisions:
            name = "%s.timing%d" % (p, i)
            run = progress.run(
                "%s timing run %d of %d (%d steps)" % (p, i + 1, args.timing_repeats,
                                                       args.timing_steps),
                runs_lib.console_log(out, name),
                lambda: runs_lib.train(p, out, list(train_args) + extra, name=name,
                                       checkpoints=False))
            timings[p].append(run.throughput())
    return timings


# The trainer's refusal of fp8 on a backend without FP8 GEMMs
# (trainer/core/run_plugins.cc).
NO_FP8_GEMMS = "runs GEMMs in FP8, but backend"


def markdown(runs, verdicts, figures, train_args, args, timings=None, left_out=None):
    first = next(iter(runs.values()))
    h = first.header
    unit = first.throughput_unit()
    load = os.getloadavg()
    lines = [
        "# Precision report (%s)" % ", ".join(runs),
        "",
        "Model **%s** (%d parameters), %d steps of %d samples, seed %s, on **%s**."
        % (h["model"], h["num_parameters"], h["total_steps"], h["samples_per_step"],
           h["config"].get("seed", "?"), h["backend"]),
        "Measured %s on %s; load average %.2f %.2f %.2f while the report ran"
        " (timings on a loaded machine are low)."
        % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), platform.node(), *load),
        "",
        "Command: `tools/bazel run //tools/report:precision_report -- %s`"
        % " ".join(["--precisions=" + args.precisions] + list(train_args)),
        "",
        "| precision | final train loss | final eval loss | eval accuracy | %s | peak memory MiB | skipped steps |" % unit,
        "|---|---|---|---|---|---|---|",
    ]
    for p, run in runs.items():
        acc = "%.2f%%" % (100 * run.evals[-1]["eval_accuracy"]) if run.evals else "-"
        lines.append("| %s | %.4f | %.4f | %s | %.1f | %.2f | %d |" % (
            p, run.train[-1]["loss"], run.final_eval_loss(), acc, run.throughput(),
            run.peak_bytes("total") / plots.MIB, run.summary["skipped_steps"]))
    lines += ["", "Throughput counts training steps only (data, forward, backward,"
              " optimizer); evaluation and checkpoints are left out."]
    for p, why in (left_out or {}).items():
        lines += ["", "%s was not run: %s" % (p, why)]
    if timings:
        lines += ["", "Timing runs (%d steps, %d of each precision, interleaved): %s."
                  % (args.timing_steps, args.timing_repeats, "; ".join(
                      "%s median %.1f (%.1f-%.1f) %s" % (
                          p, claims_lib.median(v), min(v), max(v), unit)
                      for p, v in timings.items()))]
    lines.append("")
    titles = {"loss": "Loss curves", "throughput": "Throughput",
              "memory": "Memory by category", "loss_scale": "fp16 loss scale"}
    for name in ["loss", "throughput", "memory", "loss_scale"]:
        if name in figures:
            lines += ["## %s" % titles[name], "", "![%s](%s.png)" % (titles[name], name), ""]
    lines += ["## The guide's claims, measured on this run", "",
              "| claim | verdict | measured | rule |", "|---|---|---|---|"]
    for v in verdicts:
        mark = {"holds": "**holds**", "does not hold": "**does not hold**",
                "too noisy to judge": "**too noisy to judge**"}.get(v.status, v.status)
        lines.append("| %s | %s | %s | %s |" % (v.claim, mark, v.measured, v.rule))
    speed = [v for v in verdicts if v.claim.endswith(" is faster than tf32 and fp32 on this device")]
    if any(v.status == claims_lib.FAILS for v in speed) and h["device"] == "cpu":
        lines += ["", "On the CPU backend tf32, bf16 and fp16 are emulated: operands are"
                  " rounded to the narrow format before an fp32 GEMM, which costs time and"
                  " saves none. Their speed comes from tensor cores on a GPU"
                  " (`--device=cuda`)."]
    if "fp8" in runs and h["device"] == "cpu":
        lines += ["", "fp8 on the CPU backend: the FP8 GEMMs are an exact emulation (each"
                  " operand quantized to FP8 and decoded, then an fp32 GEMM), several times"
                  " slower than bf16. Its loss shows what FP8 GEMMs do to training; its speed"
                  " is the emulation's, not a measure of FP8 hardware (FP8 tensor cores,"
                  " sm_89 or newer, `--device=cuda`)."]
    lines += ["", "Data: `plots.json` (the series drawn, read back from the figures),"
              " `steps.csv`, `summary.csv`; each run's metrics and console log are in `runs/`.",
              ""]
    return "\n".join(lines)


def main(argv):
    args, train_args, out = parse_args(argv)
    precisions = [p for p in args.precisions.split(",") if p]
    os.makedirs(out, exist_ok=True)
    repeats = max(0, args.timing_repeats)
    progress = Progress(len(precisions) * (1 + repeats))
    print("precision report: %d runs (%d precisions, then %d timing runs each) into %s"
          % (progress.total, len(precisions), repeats, out), flush=True)
    runs, left_out = {}, {}
    for p in precisions:
        try:
            runs[p] = progress.run(p, runs_lib.console_log(out, p),
                                   lambda: runs_lib.train(p, out, train_args))
        except RuntimeError as e:
            if p == "fp8" and not args.precisions_given and NO_FP8_GEMMS in str(e):
                # The default list on a device without FP8 GEMMs: the others
                # are still worth a report.
                left_out[p] = str(e).split(" (log: ")[0]
                progress.total -= repeats  # nor its timing runs
                print("precision report: fp8 left out: %s" % left_out[p], flush=True)
                continue
            print("mantissa: error: %s" % e, file=sys.stderr)
            return 1
    precisions = [p for p in precisions if p in runs]
    figures = {
        "loss": plots.loss_curves(runs, os.path.join(out, "loss.png")),
        "throughput": plots.throughput(runs, os.path.join(out, "throughput.png")),
        "memory": plots.memory(runs, os.path.join(out, "memory.png")),
    }
    if "fp16" in runs:
        figures["loss_scale"] = plots.loss_scale(runs["fp16"], os.path.join(out, "loss_scale.png"))
    with open(os.path.join(out, "plots.json"), "w") as f:
        json.dump(figures, f, indent=1)
    write_csvs(runs, out)
    try:
        timings = timing_runs(precisions, out, train_args, args, progress)
    except RuntimeError as e:
        print("mantissa: error: %s" % e, file=sys.stderr)
        return 1
    verdicts = claims_lib.judge_all(runs, args.loss_tolerance, timings)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(markdown(runs, verdicts, figures, train_args, args, timings, left_out))
    for v in verdicts:
        print("  %-52s %-14s %s" % (v.claim, v.status, v.measured))
    print("report: %s" % os.path.join(out, "report.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
