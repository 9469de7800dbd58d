#!/usr/bin/env python3
"""The GPT-2 of //tools/benchmarks:gpt2_benchmark in PyTorch, for the
side-by-side columns: prints one line per precision,
  "<precision> <tokens/s>"
or "skipped: torch not installed". CPU: eager. GPU: torch.compile, SDPA
(F.scaled_dot_product_attention, causal), fused AdamW and autocast.
Usage: gpt2_torch_bench.py L H C T VOCAB BATCH STEPS DEVICE PRECISIONS
"""
import math
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("skipped: torch not installed")
    sys.exit(0)


class Block(nn.Module):
    def __init__(self, c, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.fc, self.fcproj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, l, h, c, t, vp):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vp, c), nn.Embedding(t, c)
        self.blocks = nn.ModuleList(Block(c, h) for _ in range(l))
        self.lnf = nn.LayerNorm(c)

    def forward(self, ids, targets):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.lnf(x) @ self.wte.weight.T
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def main():
    l, h, c, t, vocab, batch, steps = (int(a) for a in sys.argv[1:8])
    device = "cuda" if sys.argv[8] == "cuda" else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        print("skipped: torch has no CUDA device")
        return
    vp = (vocab + 127) // 128 * 128
    for prec in sys.argv[9].split(","):
        torch.manual_seed(0)
        model = Gpt(l, h, c, t, vp).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=device == "cuda")
        step_fn = torch.compile(model) if device == "cuda" else model
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(prec)
        scaler = torch.amp.GradScaler(device, enabled=prec == "fp16")
        ids = torch.randint(0, vocab, (batch, t), device=device)

        def step():
            with torch.autocast(device, dtype=dtype or torch.float32, enabled=dtype is not None):
                loss = step_fn(ids, ids)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

        for _ in range(3):
            step()
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        if device == "cuda":
            torch.cuda.synchronize()
        print(prec, batch * t * steps / (time.perf_counter() - start), flush=True)


if __name__ == "__main__":
    main()
