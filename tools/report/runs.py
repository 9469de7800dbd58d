"""One training run per precision through the real `train` binary, and what
its metrics file (docs/metrics.md) says about it."""

import json
import os
import subprocess

# The categories of the backend's allocator, bottom to top in the stacked plot.
MEMORY_CATEGORIES = ["weights", "master_weights", "gradients", "optimizer_state",
                     "activations", "workspace", "data"]
# Phases that are training steps (evaluation and checkpoints are not).
TRAIN_PHASES = ["data", "forward", "backward", "optimizer"]


def runfiles_root():
    """The runfiles tree this script runs from (bazel run or bazel test)."""
    for var in ("RUNFILES_DIR", "TEST_SRCDIR"):
        if os.environ.get(var):
            return os.environ[var]
    here = os.path.abspath(__file__)
    marker = ".runfiles" + os.sep
    if marker in here:
        return here[:here.index(marker) + len(marker) - 1]
    raise RuntimeError("cannot find the runfiles (run me with bazel run)")


def train_binary():
    """$MANTISSA_TRAIN (the SDK bundle's bin/precision_report sets it to its
    bin/train), else the runfiles' trainer."""
    if os.environ.get("MANTISSA_TRAIN"):
        return os.environ["MANTISSA_TRAIN"]
    return os.path.join(runfiles_root(), "mantissa", "trainer", "cli", "train")


class Run:
    """The JSON lines of one run, parsed."""

    def __init__(self, precision, records):
        self.precision = precision
        runs = [r for r in records if r["type"] == "run"]
        summaries = [r for r in records if r["type"] == "summary"]
        if not runs or not summaries:
            raise ValueError("%s: the metrics file has no run or summary line" % precision)
        self.header = runs[-1]
        self.summary = summaries[-1]
        self.train = [r for r in records if r["type"] == "train"]
        self.evals = [r for r in records if r["type"] == "eval"]

    @property
    def is_language_model(self):
        return self.header["targets_per_example"] > 1

    def peak_bytes(self, category):
        return self.summary["memory_bytes"].get(category, {}).get("peak", 0)

    def train_seconds(self):
        """Time in training steps only: the trainer's own count (evaluation
        and checkpoints left out), else the sum of the training phases."""
        if self.summary.get("train_seconds", 0) > 0:
            return self.summary["train_seconds"]
        phases = self.summary["phase_seconds"]
        return sum(phases.get(p, 0.0) for p in TRAIN_PHASES)

    def throughput(self):
        """Tokens/s for a language model, else samples/s, over training steps
        only (evaluation and checkpoint time excluded)."""
        steps = self.summary["steps"] - self.header["start_step"]
        samples = steps * self.header["samples_per_step"]
        seconds = self.train_seconds()
        per_second = samples / seconds if seconds > 0 else 0.0
        if self.is_language_model:
            per_second *= self.header["targets_per_example"]
        return per_second

    def throughput_unit(self):
        return "tokens/s" if self.is_language_model else "samples/s"

    def final_eval_loss(self):
        if self.evals:
            return self.evals[-1]["eval_loss"]
        return self.train[-1]["loss"]


def load_run(precision, jsonl_path):
    with open(jsonl_path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return Run(precision, records)


def console_log(out_dir, name):
    """Where train(name=name) keeps the run's console output."""
    return os.path.join(out_dir, "runs", name + ".log")


def train(precision, out_dir, train_args, log=None, name=None, checkpoints=True):
    """Runs `train` in `precision` with the user's flags; returns its Run.
    Metrics, the console log and checkpoints go under out_dir/runs/, named
    `name` (default: the precision); checkpoints=False keeps none. `log`, a
    file: where to write the command first (None: nowhere)."""
    name = name or precision
    runs_dir = os.path.join(out_dir, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    jsonl = os.path.join(runs_dir, name + ".jsonl")
    if os.path.exists(jsonl):
        os.remove(jsonl)  # this report's own earlier output
    console = console_log(out_dir, name)
    cmd = [train_binary()] + list(train_args) + [
        "--precision=" + precision,
        "--metrics_jsonl=" + jsonl,
        "--progress=plain",
        # Never the main job's own checkpoint directory.
        "--checkpoint_dir=" + (os.path.join(runs_dir, name + "-checkpoint") if checkpoints
                               else "none"),
    ]
    if log is not None:
        log.write("  %s: %s\n" % (precision, " ".join(cmd[1:])))
        log.flush()
    with open(console, "w") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE,
                              universal_newlines=True)
    if done.returncode != 0:
        raise RuntimeError("%s run failed: %s (log: %s)"
                           % (precision, done.stderr.strip(), console))
    return load_run(precision, jsonl)
