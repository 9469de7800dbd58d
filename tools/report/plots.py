"""The report's figures, drawn with matplotlib. Each function saves a PNG and
returns the series it drew, read back from the figure's own artists (lines'
x/y, bars' heights), so plots.json holds what the picture shows."""

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from tools.report import runs as runs_lib  # noqa: E402

COLORS = {"fp32": "#1f77b4", "tf32": "#2ca02c", "bf16": "#ff7f0e", "fp16": "#d62728",
          "fp8": "#9467bd"}
CATEGORY_COLORS = {"weights": "#4c72b0", "master_weights": "#8172b2",
                   "gradients": "#dd8452", "optimizer_state": "#937860",
                   "activations": "#55a868", "workspace": "#8c8c8c", "data": "#64b5cd"}
DPI = 100
MIB = 1024.0 * 1024.0


def color_of(precision):
    return COLORS.get(precision, "#7f7f7f")


def _lines(ax):
    return [{"label": l.get_label(), "color": mcolors.to_hex(l.get_color()),
             "x": [float(v) for v in l.get_xdata()],
             "y": [float(v) for v in l.get_ydata()]}
            for l in ax.get_lines() if not l.get_label().startswith("_")]


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _ema(values, alpha=0.1):
    out, acc = [], None
    for v in values:
        acc = v if acc is None else (1 - alpha) * acc + alpha * v
        out.append(acc)
    return out


def loss_curves(runs, path):
    """Top: every run's training and evaluation loss (they often overlap
    exactly). Bottom: each precision's distance from fp32, where the
    differences show."""
    fig, (ax, diff) = plt.subplots(2, 1, figsize=(8, 7), sharex=True,
                                   gridspec_kw={"height_ratios": [3, 2]})
    for p, run in runs.items():
        ax.plot([r["step"] for r in run.train], [r["loss"] for r in run.train],
                color=color_of(p), linewidth=1.2, label="%s train" % p)
        if run.evals:
            ax.plot([r["step"] for r in run.evals], [r["eval_loss"] for r in run.evals],
                    color=color_of(p), linewidth=2.2, linestyle="--", marker="o",
                    label="%s eval" % p)
    ax.set_yscale("log")
    ax.set_ylabel("loss (log scale)")
    ax.set_title("Training and evaluation loss per precision (same model, data, seed)")
    ax.grid(alpha=0.3)
    ax.legend(ncol=2, fontsize=8)
    base = runs.get("fp32")
    if base is not None:
        base_train = {r["step"]: r["loss"] for r in base.train}
        base_eval = {r["step"]: r["eval_loss"] for r in base.evals}
        for p, run in runs.items():
            if p == "fp32":
                continue
            pairs = [(r["step"], r["loss"] - base_train[r["step"]])
                     for r in run.train if r["step"] in base_train]
            if pairs:
                diff.plot([s for s, _ in pairs], _ema([d for _, d in pairs]),
                          color=color_of(p), linewidth=1.5,
                          label="%s - fp32 train (EMA 0.1)" % p)
            evals = [(r["step"], r["eval_loss"] - base_eval[r["step"]])
                     for r in run.evals if r["step"] in base_eval]
            if evals:
                diff.plot([s for s, _ in evals], [d for _, d in evals], color=color_of(p),
                          linewidth=2.2, linestyle="--", marker="o",
                          label="%s - fp32 eval" % p)
        diff.axhline(0.0, color="#000000", linewidth=0.8)
        diff.legend(ncol=2, fontsize=7)
    diff.set_xlabel("optimizer step")
    diff.set_ylabel("loss - fp32 loss")
    diff.grid(alpha=0.3)
    series, differences = _lines(ax), _lines(diff)
    _save(fig, path)
    return {"kind": "lines", "series": series, "difference_from_fp32": differences}


def _bars(ax):
    out = []
    for container in ax.containers:
        out.append({"label": container.get_label(),
                    "colors": [mcolors.to_hex(b.get_facecolor()) for b in container.patches],
                    "heights": [float(b.get_height()) for b in container.patches],
                    "bottoms": [float(b.get_y()) for b in container.patches]})
    return out


def throughput(runs, path):
    names = list(runs)
    values = [runs[p].throughput() for p in names]
    unit = next(iter(runs.values())).throughput_unit()
    fig, ax = plt.subplots(figsize=(6, 4))
    bars = ax.bar(names, values, color=[color_of(p) for p in names], label=unit)
    for b, v in zip(bars, values):
        ax.annotate("%.0f" % v if v >= 100 else "%.3g" % v,
                    (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center", va="bottom", fontsize=9)
    ax.set_ylabel("%s (training steps only)" % unit)
    ax.set_title("Throughput per precision")
    ax.grid(axis="y", alpha=0.3)
    series = _bars(ax)
    _save(fig, path)
    return {"kind": "bars", "categories": names, "series": series}


def memory(runs, path):
    names = list(runs)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    bottoms = [0.0] * len(names)
    for cat in runs_lib.MEMORY_CATEGORIES:
        heights = [runs[p].peak_bytes(cat) / MIB for p in names]
        ax.bar(names, heights, bottom=bottoms, color=CATEGORY_COLORS[cat], label=cat)
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    for i, total in enumerate(bottoms):
        ax.annotate("%.2f MiB" % total, (i, total), ha="center", va="bottom", fontsize=9)
    ax.set_ylabel("peak MiB per category (stacked)")
    ax.set_title("Memory by category per precision")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    series = _bars(ax)
    _save(fig, path)
    return {"kind": "stacked_bars", "categories": names, "series": series}


def loss_scale(run, path):
    fig, ax = plt.subplots(figsize=(8, 3.5))
    steps = [r["step"] for r in run.train]
    ax.plot(steps, [r["loss_scale"] for r in run.train], color=color_of(run.precision),
            linewidth=1.8, drawstyle="steps-post", label="%s loss scale" % run.precision)
    skipped = [r for r in run.train if r["skipped"]]
    if skipped:
        ax.plot([r["step"] for r in skipped], [r["loss_scale"] for r in skipped],
                linestyle="none", marker="x", markersize=8, color="#000000",
                label="skipped step (%d)" % len(skipped))
    ax.set_yscale("log", base=2)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss scale")
    ax.set_title("%s dynamic loss scale (GradScaler semantics)" % run.precision)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    series = _lines(ax)
    _save(fig, path)
    return {"kind": "lines", "series": series}
