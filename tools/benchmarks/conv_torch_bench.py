#!/usr/bin/env python3
"""ResNet-50's convolution layers in PyTorch eager on the CPU, the twin of
//tools/benchmarks:cnn_benchmark's conv table: the same layers (c, h, k, r,
stride, pad), batch, NCHW tensors in the storage dtype, and the same timing
(one untimed call, then --iters calls timed together, 2*N*K*P*Q*C*R*S flops
each): forward F.conv2d, backward data torch.nn.grad.conv2d_input, backward
filter torch.nn.grad.conv2d_weight. fp32 and tf32 are fp32 (no CPU has
TF32); bf16 and fp16 tensors are bf16 and fp16.

Also (--matmul N): torch.mm's rate on N x N x N in bf16 and fp32, the
number beside oneDNN's own peak in cpu_side_by_side.

Output: CSV rows on stdout and, with --csv, appended to a file:
  framework,precision,layer,pass,status,tflops
(layer "mm NxNxN", pass "-" for the matmul). Without torch: one line
"skipped: ..." and exit 0.
"""
import argparse
import os
import sys
import time

CSV_HEADER = "framework,precision,layer,pass,status,tflops"

# name, c, h, k, r, stride, pad: as cnn_benchmark.cc's kLayers.
LAYERS = [
    ("conv1 7x7/2", 3, 224, 64, 7, 2, 3),
    ("res2 1x1", 64, 56, 64, 1, 1, 0),
    ("res2 3x3", 64, 56, 64, 3, 1, 1),
    ("res3 3x3", 128, 28, 128, 3, 1, 1),
    ("res4 3x3", 256, 14, 256, 3, 1, 1),
    ("res4 1x1 up", 256, 14, 1024, 1, 1, 0),
    ("res5 3x3", 512, 7, 512, 3, 1, 1),
]
PASSES = ["fwd", "bwd-data", "bwd-filter"]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--iters", type=int, default=5, help="timed calls per layer and pass")
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--matmul", type=int, default=0, help="also time torch.mm at N^3 (0: no)")
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
        import torch.nn.functional as F
        from torch.nn.grad import conv2d_input, conv2d_weight
    except ImportError:
        print("skipped: torch is not installed")
        return 0
    dtypes = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
              "fp16": torch.float16}
    n = args.batch
    for prec in [p for p in args.precisions.split(",") if p]:
        dt = dtypes[prec]
        for name, c, h, k, r, stride, pad in LAYERS:
            x = torch.rand(n, c, h, h, dtype=dt) * 0.1
            w = torch.rand(k, c, r, r, dtype=dt) * 0.1
            y = F.conv2d(x, w, stride=stride, padding=pad)
            pq = y.shape[2]
            flops = 2.0 * n * k * pq * pq * c * r * r
            calls = [lambda: F.conv2d(x, w, stride=stride, padding=pad),
                     lambda: conv2d_input(x.shape, w, y, stride=stride, padding=pad),
                     lambda: conv2d_weight(x, w.shape, y, stride=stride, padding=pad)]
            for pass_name, call in zip(PASSES, calls):
                try:
                    call()
                    t0 = time.perf_counter()
                    for _ in range(args.iters):
                        call()
                    secs = time.perf_counter() - t0
                    emit(args, "pytorch,%s,%s,%s,ok,%.4f" % (prec, name, pass_name,
                                                             flops * args.iters / secs / 1e12))
                except RuntimeError as e:  # a dtype this build has no kernel for
                    emit(args, f"pytorch,{prec},{name},{pass_name},failed,0")
                    print(f"# {prec} {name} {pass_name}: {e}", file=sys.stderr)
    if args.matmul > 0:
        m = args.matmul
        for prec in ("bf16", "fp32"):
            a = torch.rand(m, m, dtype=dtypes[prec])
            b = torch.rand(m, m, dtype=dtypes[prec])
            torch.mm(a, b)
            best, total = 1e30, 0.0
            while total < 1.0 or best == 1e30:
                t0 = time.perf_counter()
                torch.mm(a, b)
                s = time.perf_counter() - t0
                best, total = min(best, s), total + s
            emit(args, "pytorch,%s,mm %dx%dx%d,-,ok,%.4f" % (prec, m, m, m,
                                                            2.0 * m ** 3 / best / 1e12))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
