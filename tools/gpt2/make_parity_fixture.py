#!/usr/bin/env python3
"""Writes tests/gpt2/testdata/parity_fixture.bin: a GPT-2 reference computed
by PyTorch in float64 for a tiny configuration with fixed weights.

Contents: the configuration, the AdamW hyper-parameters, the weights (fp32
values, in Mantissa's = llm.c's order and layout, models/gpt2/gpt2_network.h),
token ids and targets, logits [B*T, Vp], the mean cross-entropy loss over the
first V logit columns, every parameter gradient, and the losses of 10 AdamW
steps on the same batch (loss before each step, then after the last: 11).

AdamW is torch.optim.AdamW (decoupled decay, bias correction, amsgrad off),
which is Mantissa's ADAMW_STEP; weight decay only on the tensors Mantissa's
spec decays (wte, wpe and the four linear weights); constant lr, no gradient
clipping.

Needs PyTorch (pip install torch); the build and the tests never run this.
Regenerate:  python3 tools/gpt2/make_parity_fixture.py [output]

File format (little-endian): b"MNTPARv1", u32 record count, then records:
u32 name length, name bytes, u32 rank, rank x i64 dims, float64 data.
"""
import math
import struct
import sys

import torch

L, H, C, MAX_T, V = 2, 2, 16, 8, 64
VP = (V + 127) // 128 * 128
B, T = 2, 8
LR, BETA1, BETA2, EPS, WD = 1e-2, 0.9, 0.999, 1e-8, 0.1
STEPS = 10
SEED = 20240326
LN_EPS = 1e-5

# (name, dims, kind, decayed) in llm.c's order.
SPECS = [
    ("wte", [VP, C], "w", True), ("wpe", [MAX_T, C], "w", True),
    ("ln1w", [L, C], "one", False), ("ln1b", [L, C], "b", False),
    ("qkvw", [L, 3 * C, C], "w", True), ("qkvb", [L, 3 * C], "b", False),
    ("attprojw", [L, C, C], "w", True), ("attprojb", [L, C], "b", False),
    ("ln2w", [L, C], "one", False), ("ln2b", [L, C], "b", False),
    ("fcw", [L, 4 * C, C], "w", True), ("fcb", [L, 4 * C], "b", False),
    ("fcprojw", [L, C, 4 * C], "w", True), ("fcprojb", [L, C], "b", False),
    ("lnfw", [C], "one", False), ("lnfb", [C], "b", False),
]


def make_weights(gen):
    params = []
    for name, dims, kind, _ in SPECS:
        x = torch.randn(dims, generator=gen, dtype=torch.float64)
        if kind == "w":
            x = 0.2 * x
        elif kind == "one":
            x = 1.0 + 0.1 * x
        else:
            x = 0.1 * x
        if name == "wte":
            x[V:] = 0.0  # llm.c keeps the padding rows at zero
        # Mantissa reads fp32 weights: the reference starts from the same.
        params.append(x.to(torch.float32).to(torch.float64))
    return params


def layer_norm(x, w, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + LN_EPS) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * x ** 3)))


def forward(p, ids, targets):
    (wte, wpe, ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw,
     fcb, fcprojw, fcprojb, lnfw, lnfb) = p
    D = C // H
    x = wte[ids] + wpe[:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        h = layer_norm(x, ln1w[l], ln1b[l])
        qkv = h @ qkvw[l].T + qkvb[l]
        q, k, v = qkv.split(C, dim=-1)
        q = q.view(B, T, H, D).transpose(1, 2)
        k = k.view(B, T, H, D).transpose(1, 2)
        v = v.view(B, T, H, D).transpose(1, 2)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        s = s.masked_fill(~mask, float("-inf"))
        y = torch.softmax(s, dim=-1) @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        x = x + y @ attprojw[l].T + attprojb[l]
        h = layer_norm(x, ln2w[l], ln2b[l])
        f = gelu_tanh(h @ fcw[l].T + fcb[l])
        x = x + f @ fcprojw[l].T + fcprojb[l]
    x = layer_norm(x, lnfw, lnfb)
    logits = (x @ wte.T).reshape(B * T, VP)
    loss = torch.nn.functional.cross_entropy(logits[:, :V], targets.reshape(-1))
    return logits, loss


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/gpt2/testdata/parity_fixture.bin"
    gen = torch.Generator().manual_seed(SEED)
    params = make_weights(gen)
    ids = torch.randint(0, V, (B, T), generator=gen)
    targets = torch.randint(0, V, (B, T), generator=gen)

    leaves = [p.clone().requires_grad_(True) for p in params]
    logits, loss = forward(leaves, ids, targets)
    loss.backward()
    grads = [p.grad.detach().clone() for p in leaves]

    train = [p.clone().requires_grad_(True) for p in params]
    opt = torch.optim.AdamW(
        [{"params": [t for t, s in zip(train, SPECS) if s[3]], "weight_decay": WD},
         {"params": [t for t, s in zip(train, SPECS) if not s[3]], "weight_decay": 0.0}],
        lr=LR, betas=(BETA1, BETA2), eps=EPS, foreach=False)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        _, l = forward(train, ids, targets)
        losses.append(l.item())
        l.backward()
        opt.step()
    with torch.no_grad():
        losses.append(forward(train, ids, targets)[1].item())

    records = [
        ("config", [7], [L, H, C, MAX_T, V, B, T]),
        ("adamw", [5], [LR, BETA1, BETA2, EPS, WD]),
        ("ids", [B, T], ids.reshape(-1).tolist()),
        ("targets", [B, T], targets.reshape(-1).tolist()),
        ("logits", [B * T, VP], logits.detach().reshape(-1).tolist()),
        ("loss", [1], [loss.item()]),
        ("step_losses", [STEPS + 1], losses),
    ]
    for (name, dims, _, _), p, g in zip(SPECS, params, grads):
        records.append(("param/" + name, dims, p.reshape(-1).tolist()))
        records.append(("grad/" + name, dims, g.reshape(-1).tolist()))
    with open(out, "wb") as f:
        f.write(b"MNTPARv1")
        f.write(struct.pack("<I", len(records)))
        for name, dims, data in records:
            n = name.encode()
            f.write(struct.pack("<I", len(n)) + n)
            f.write(struct.pack("<I", len(dims)))
            f.write(struct.pack("<%dq" % len(dims), *dims))
            f.write(struct.pack("<%dd" % len(data), *[float(v) for v in data]))
    print("torch %s: loss %.9f, step losses %s -> %s" %
          (torch.__version__, loss.item(), ["%.6f" % v for v in losses], out))


if __name__ == "__main__":
    torch.set_default_dtype(torch.float64)
    main()
