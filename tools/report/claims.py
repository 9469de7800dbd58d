"""The mixed-precision guide's claims, judged on one set of runs.

Each claim gets a verdict (holds / does not hold / not measured), the
measured numbers and the rule used, so the report says exactly what was
checked. Inputs are the Run objects of runs.py, by precision name.
"""

import collections

Verdict = collections.namedtuple("Verdict", "claim status measured rule")

HOLDS, FAILS, NOT_MEASURED = "holds", "does not hold", "not measured"
NOISY = "too noisy to judge"
SIXTEEN_BIT = ("bf16", "fp16")
# Precisions that keep 16-bit weights, gradients and activations beside
# fp32 masters: the memory claims hold for each (fp8 stores bf16; only its
# GEMM operands are FP8, quantized into workspace).
SIXTEEN_BIT_STORAGE = ("bf16", "fp16", "fp8")
# Said of fp8's speed wherever it was measured on the CPU backend.
CPU_FP8_NOTE = ("on the CPU backend FP8 GEMMs are an exact emulation (FP8 operands decoded, "
                "fp32 GEMM): its fp8 speed is that of the emulation, not a measure of FP8 "
                "hardware")


def _ratio(a, b):
    return a / b if b else float("nan")


def _loss_matches(runs, tolerance, p, base):
    claim = "%s reaches %s's loss" % (p, base)
    rule = ("final evaluation loss within %.1f%% (relative) of %s's" % (100 * tolerance, base))
    if p not in runs or base not in runs:
        return Verdict(claim, NOT_MEASURED, "needs %s and %s runs" % (base, p), rule)
    a, b = runs[p].final_eval_loss(), runs[base].final_eval_loss()
    diff = abs(a - b) / abs(b)
    measured = "%s %.4f vs %s %.4f: %.2f%% apart" % (p, a, base, b, 100 * diff)
    return Verdict(claim, HOLDS if diff <= tolerance else FAILS, measured, rule)


def tf32_matches_fp32(runs, tolerance):
    return _loss_matches(runs, tolerance, "tf32", "fp32")


def fp8_matches_bf16(runs, tolerance):
    """fp8 is bf16 with FP8 GEMMs: its loss is compared with bf16's."""
    return _loss_matches(runs, tolerance, "fp8", "bf16")


def _by_16bit(runs, category, numerator_categories=None, precisions=SIXTEEN_BIT_STORAGE):
    """{precision: peak(16-bit, numerator categories) / peak(fp32, category)}."""
    out = {}
    for p in precisions:
        if p in runs and "fp32" in runs:
            num = sum(runs[p].peak_bytes(c) for c in (numerator_categories or [category]))
            out[p] = _ratio(num, runs["fp32"].peak_bytes(category))
    return out


def _judge(claim, rule, ratios, ok, fmt):
    if not ratios:
        return Verdict(claim, NOT_MEASURED, "needs fp32 and a 16-bit run", rule)
    measured = ", ".join(fmt % (p, r) for p, r in sorted(ratios.items()))
    return Verdict(claim, HOLDS if all(ok(r) for r in ratios.values()) else FAILS,
                   measured, rule)


def activations_halve(runs):
    # bf16 and fp16 only: fp8's activations also hold the FP8 copies of GEMM
    # inputs kept for the backward, and what a model frees in exchange is
    # the model's (GPT-2 frees its GEMM-only inputs, the MLP nothing).
    return _judge(
        "16-bit activations take half the bytes",
        "peak activation bytes of the bf16/fp16 run / fp32's within 0.50 +- 0.05",
        _by_16bit(runs, "activations", precisions=("bf16", "fp16")),
        lambda r: abs(r - 0.5) <= 0.05, "%s %.3fx fp32")


def model_at_one_and_a_half(runs):
    return _judge(
        "the model sits at 1.5x in 16 bit",
        "(16-bit weights + fp32 master weights) / fp32 weights within 1.50 +- 0.05",
        _by_16bit(runs, "weights", ["weights", "master_weights"]),
        lambda r: abs(r - 1.5) <= 0.05, "%s %.3fx fp32's weights")


def gradients_no_saving(runs):
    return _judge(
        "gradients bring no saving (fp32 master gradients)",
        "peak gradient bytes of the 16-bit run / fp32's >= 0.95 (no saving)",
        _by_16bit(runs, "gradients"), lambda r: r >= 0.95, "%s %.3fx fp32")


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _faster(runs, timings, claim, rule, fast_names, base_names, needs):
    """`timings`: {precision: [throughput of each timing run]} (interleaved
    repeats); without them each run's own throughput, one timing each. With
    repeats a pair is judged only when the ranges do not overlap: a range
    of `fast_names` wholly above one of `base_names` holds, wholly below
    fails, else the spread is larger than the difference and the verdict is
    NOISY."""
    if timings:
        samples = {p: list(v) for p, v in timings.items() if v}
        rule += (" (medians of %d interleaved timing runs each; judged only where the "
                 "min-max ranges do not overlap)" % min(len(v) for v in samples.values()))
    else:
        samples = {p: [runs[p].throughput()] for p in runs}
    base = {p: samples[p] for p in base_names if p in samples}
    fast = {p: samples[p] for p in fast_names if p in samples}
    if not base or not fast:
        return Verdict(claim, NOT_MEASURED, needs, rule)
    parts, holds, fails, noisy = [], True, False, False
    for p, v in sorted(fast.items()):
        for q, w in sorted(base.items()):
            r = _ratio(median(v), median(w))
            if len(v) > 1 or len(w) > 1:
                if min(v) > max(w):
                    part_ok = True
                elif max(v) < min(w):
                    part_ok = False
                else:
                    noisy = True
                    part_ok = True
                parts.append("%s %.2fx %s (ranges %.0f-%.0f vs %.0f-%.0f)"
                             % (p, r, q, min(v), max(v), min(w), max(w)))
            else:
                part_ok = r > 1.0
                parts.append("%s %.2fx %s" % (p, r, q))
            holds &= part_ok
            fails |= not part_ok
    status = FAILS if fails else NOISY if noisy else HOLDS
    return Verdict(claim, status, ", ".join(parts), rule)


def sixteen_bit_faster(runs, timings=None, precision="bf16"):
    """One 16-bit format against fp32 and tf32 (see _faster). bf16 and fp16
    are judged apart: on a GPU one can be clearly faster while the other is
    not (fp16's loss scaling, a library's kernels), and one verdict for both
    would call the faster one's win a failure."""
    return _faster(runs, timings, "%s is faster than tf32 and fp32 on this device" % precision,
                   "training throughput of the %s run above both fp32's and tf32's" % precision,
                   (precision,), ("fp32", "tf32"), "needs a %s run and fp32 or tf32" % precision)


def fp8_faster(runs, timings=None):
    """fp8 against bf16 (see _faster): FP8 tensor cores run GEMMs at twice
    bf16's rate. Measured on the CPU backend the verdict says the speed is
    an emulation's."""
    v = _faster(runs, timings, "fp8 is faster than bf16 on this device",
                "training throughput of the fp8 run above bf16's",
                ("fp8",), ("bf16",), "needs fp8 and bf16 runs")
    if v.status != NOT_MEASURED and runs.get("fp8") is not None and \
            runs["fp8"].header.get("device") == "cpu":
        v = v._replace(measured="%s; %s" % (v.measured, CPU_FP8_NOTE))
    return v


def judge_all(runs, loss_tolerance, timings=None):
    return [tf32_matches_fp32(runs, loss_tolerance), activations_halve(runs),
            model_at_one_and_a_half(runs), gradients_no_saving(runs),
            *[sixteen_bit_faster(runs, timings, p) for p in SIXTEEN_BIT],
            fp8_matches_bf16(runs, loss_tolerance),
            fp8_faster(runs, timings)]
