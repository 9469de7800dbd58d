#!/usr/bin/env python3
"""MLP training throughput in PyTorch on the CPU (eager, or --compile=on), side by side with
Mantissa's //tools/benchmarks:precision_benchmark: the same model (64 inputs,
hidden 1024:1024 with ReLU, 10 classes, mean softmax cross-entropy), the same
batch, AdamW (lr 1e-3, weight decay 0.01), gradient clipping at global norm
1.0, and the same counting (samples/s over timed steps after warm-up steps).
fp32 and tf32 are plain fp32 (no CPU has TF32), bf16 and fp16 run under CPU
autocast (fp16 with GradScaler). Inputs are random (the digits images are
8x8 = 64 features; the values do not change the work).

Output: one CSV row per precision on stdout and, with --csv, appended to a
file:  framework,precision,batch,status,samples_per_s,ms_per_step
Without torch, one line "skipped: ..." and exit 0.
"""
import argparse
import os
import sys
import time

CSV_HEADER = "framework,precision,batch,status,samples_per_s,ms_per_step"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inputs", type=int, default=64)
    p.add_argument("--hidden", default="1024:1024")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--precisions", default="fp32,tf32,bf16,fp16")
    p.add_argument("--steps", type=int, default=100, help="timed steps per precision")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps before them")
    p.add_argument("--compile", default="off", choices=["on", "off"],
                   help="on: the model under torch.compile (Inductor), compiled in the warm-up")
    p.add_argument("--csv", default="")
    return p.parse_args(argv)


def emit(args, row):
    print(row, flush=True)
    if args.csv:
        fresh = not os.path.exists(args.csv)
        with open(args.csv, "a") as f:
            if fresh:
                f.write(CSV_HEADER + "\n")
            f.write(row + "\n")


def main(argv):
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("skipped: torch is not installed")
        return 0
    autocast = {"bf16": torch.bfloat16, "fp16": torch.float16}
    widths = [args.inputs] + [int(h) for h in args.hidden.split(":")] + [args.classes]
    for prec in args.precisions.split(","):
        torch.manual_seed(0)
        layers = []
        for i in range(len(widths) - 1):
            layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
            if i + 2 < len(widths):
                layers.append(torch.nn.ReLU())
        model = torch.nn.Sequential(*layers)
        forward = torch.compile(model) if args.compile == "on" else model
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
        scaler = torch.amp.GradScaler("cpu", enabled=prec == "fp16")
        dtype = autocast.get(prec)
        x = torch.rand(args.batch, args.inputs)
        y = torch.randint(0, args.classes, (args.batch,))

        def step():
            with torch.autocast("cpu", dtype=dtype or torch.float32, enabled=dtype is not None):
                loss = torch.nn.functional.cross_entropy(forward(x), y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()

        try:
            for _ in range(args.warmup):
                step()
            t0 = time.perf_counter()
            for _ in range(args.steps):
                step()
            dt = time.perf_counter() - t0
        except RuntimeError as e:  # e.g. an autocast dtype this build lacks
            emit(args, f"pytorch,{prec},{args.batch},failed,0,0")
            print(f"# {prec}: {e}", file=sys.stderr)
            continue
        emit(args, "pytorch,%s,%d,ok,%.1f,%.3f" % (prec, args.batch, args.steps * args.batch / dt,
                                                   1000 * dt / args.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
