"""Compares two training runs' --metrics_jsonl: a frozen plugin binary's and
the same source's rebuilt against today's SDK. They must be the same run bit
for bit: every step's loss, learning rate, loss scale, skip and gradient norm,
every evaluation, the final scale and the loss-scaling path the trainer chose.

  python3 compare_runs.py LABEL KIND ABI FROZEN.jsonl REBUILT.jsonl [skips]

KIND is the plugin under test (precision or model); both runs must have
loaded it as ABI `ABI` from different files. `skips`: the run must also
have skipped some steps and applied others (its loss scaler at work).
Prints one line on success.
"""
import json
import math
import sys


def load(path):
    records = {"run": [], "train": [], "eval": [], "summary": []}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") in records:
                records[r["type"]].append(r)
    if len(records["run"]) != 1 or len(records["summary"]) != 1:
        raise SystemExit("%s: want one run and one summary record" % path)
    return records


def plugin(run, kind, path):
    found = [p for p in run["plugins"] if p["kind"] == kind]
    if len(found) != 1:
        raise SystemExit("%s: no single %s plugin in %r" % (path, kind, run["plugins"]))
    return found[0]


def finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


def main():
    label, kind, abi, frozen_path, rebuilt_path = sys.argv[1:6]
    want_skips = sys.argv[6:] == ["skips"]
    frozen, rebuilt = load(frozen_path), load(rebuilt_path)
    problems = []

    fp = plugin(frozen["run"][0], kind, frozen_path)
    rp = plugin(rebuilt["run"][0], kind, rebuilt_path)
    if fp["abi_version"] != abi or rp["abi_version"] != abi:
        problems.append("%s plugin ABI: frozen %s, rebuilt %s (want %s both)"
                        % (kind, fp["abi_version"], rp["abi_version"], abi))
    if fp["file"] == rp["file"]:
        problems.append("both runs loaded %s" % fp["file"])
    reason = frozen["run"][0]["loss_scaling_reason"]
    if rebuilt["run"][0]["loss_scaling_reason"] != reason:
        problems.append("loss scaling: frozen '%s', rebuilt '%s'"
                        % (reason, rebuilt["run"][0]["loss_scaling_reason"]))

    keys = ("step", "loss", "lr", "loss_scale", "skipped", "skipped_steps", "grad_norm")
    steps = [[tuple(r.get(k) for k in keys) for r in run["train"]] for run in (frozen, rebuilt)]
    total = frozen["run"][0]["total_steps"]
    if len(steps[0]) != total or [s[0] for s in steps[0]] != list(range(1, total + 1)):
        problems.append("frozen run: steps %r, want 1..%d" % ([s[0] for s in steps[0]], total))
    if not all(finite(s[1]) for s in steps[0]):
        problems.append("frozen run: a non-finite loss")
    if all(s[4] for s in steps[0]):
        problems.append("frozen run: every step was skipped")
    if want_skips and not any(s[4] for s in steps[0]):
        problems.append("frozen run: no step was skipped (the loss scaler never backed off)")
    for a, b in zip(steps[0], steps[1]):
        if a != b:
            problems.append("step %s differs:\n  frozen  %r\n  rebuilt %r" % (a[0], a, b))
            break
    if len(steps[0]) != len(steps[1]):
        problems.append("frozen %d steps, rebuilt %d" % (len(steps[0]), len(steps[1])))

    evals = [[(r["step"], r["eval_loss"], r["eval_accuracy"]) for r in run["eval"]]
             for run in (frozen, rebuilt)]
    if evals[0] != evals[1] or not evals[0]:
        problems.append("evaluations: frozen %r, rebuilt %r" % (evals[0], evals[1]))
    ends = [(run["summary"][0]["final_loss_scale"], run["summary"][0]["skipped_steps"])
            for run in (frozen, rebuilt)]
    if ends[0] != ends[1]:
        problems.append("final scale, skipped: frozen %r, rebuilt %r" % ends)

    if problems:
        print("FAIL: %s:\n%s" % (label, "\n".join(problems)))
        sys.exit(1)
    print("ok: %s: %d steps bit-identical (loss, lr, loss_scale, skipped, grad_norm; "
          "%d skipped; final scale %g; eval loss %r); %s"
          % (label, total, ends[0][1], ends[0][0], evals[0][-1][1], reason))


if __name__ == "__main__":
    main()
