#!/usr/bin/env python3
"""GPT-2 training throughput in PyTorch, side by side with Mantissa's
//tools/benchmarks:gpt2_benchmark: the same model (llm.c's GPT-2: learned
positions, pre-LayerNorm blocks, causal attention, GELU(tanh) MLP, logits tied
to the token embedding, vocabulary padded to a multiple of 128 and masked out
of the loss), the same shapes, the same token shard and the same counting
(tokens/s over timed steps after warm-up steps, MFU = tokens/s x
(6N + 12*L*C*T) / peak, N every parameter).

On a GPU: torch.compile (the batch dimension marked dynamic, so one compile
serves every batch size of a precision and checkpointing setting), F.scaled_dot_product_attention,
fused AdamW; fp32 with TF32 off, tf32 with TF32 matmuls on, bf16 and fp16
under autocast (fp16 with GradScaler); gradient checkpointing recomputes each
block (torch.utils.checkpoint, non-reentrant). On the CPU: the same, eager
unless --compile=on. Only what a PyTorch 2.x image has; no numpy needed.

Output: one CSV row per (precision, batch, checkpointing) on stdout and,
with --csv, appended to a file (columns shared with gpt2_benchmark):
  framework,precision,batch,seq,ckpt,status,tokens_per_s,ms_per_step,
  mfu_measured,mfu_datasheet,gemm_tflops,datasheet_tflops,peak_mib,note
Without torch, or with --device=cuda and no CUDA device, one line
"skipped: ..." and exit 0.

Time limits (the device check): --deadline (Unix time) stops starting rows
that would not finish; such rows are reported "skipped,...,time budget".
Two phases, so torch.compile's minutes overlap other (untimed) work:
  --ready_file F --go_file G [--stop_warm_file S]
compiles and warms every configuration (until S exists or the deadline),
writes F, frees cached memory, waits for G, then times every row.
"""
import argparse
import json
import math
import os
import sys
import time

CSV_HEADER = ("framework,precision,batch,seq,ckpt,status,tokens_per_s,ms_per_step,"
              "mfu_measured,mfu_datasheet,gemm_tflops,datasheet_tflops,peak_mib,note")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=50257, help="real vocabulary (padded to 128)")
    p.add_argument("--batches", default="8,16")
    p.add_argument("--precisions", default="fp32,tf32,bf16,fp16")
    p.add_argument("--checkpointing", default="off,on")
    p.add_argument("--steps", type=int, default=10, help="timed steps per row")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps before them")
    p.add_argument("--data", default="", help="llm.c token shard; '' = random tokens")
    p.add_argument("--device", default="cuda")
    p.add_argument("--compile", default="auto", choices=["auto", "on", "off"])
    p.add_argument("--gemm_size", type=int, default=8192, help="0: no GEMM peak")
    p.add_argument("--datasheet", default="", help="e.g. fp32=67,tf32=494.7,bf16=989.4")
    p.add_argument("--csv", default="")
    p.add_argument("--deadline", type=float, default=0, help="Unix time; 0 = none")
    p.add_argument("--ready_file", default="")
    p.add_argument("--go_file", default="")
    p.add_argument("--stop_warm_file", default="")
    return p.parse_args(argv)


def emit(args, fields):
    row = ",".join("" if f is None else str(f) for f in fields)
    print(row, flush=True)
    if args.csv:
        fresh = not os.path.exists(args.csv)
        with open(args.csv, "a") as f:
            if fresh:
                f.write(CSV_HEADER + "\n")
            f.write(row + "\n")


def parse_peaks(spec):
    out = {}
    for item in filter(None, spec.split(",")):
        name, value = item.split("=")
        out[name] = float(value) * 1e12
    return out


try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.utils.checkpoint
except ImportError:
    torch = None


def read_tokens(path, vocab, need):
    """Tokens of an llm.c shard (1024-byte header of int32: magic 20240520,
    version 1, count; then uint16), or `need` deterministic random tokens."""
    if not path:
        g = torch.Generator().manual_seed(1234)
        return torch.randint(0, vocab, (need,), generator=g, dtype=torch.int64)
    with open(path, "rb") as f:
        data = f.read()
    header = torch.frombuffer(bytearray(data[:1024]), dtype=torch.int32)
    if int(header[0]) != 20240520 or int(header[1]) != 1:
        raise SystemExit(f"{path}: not an llm.c token shard (magic/version)")
    count = int(header[2])
    raw = torch.frombuffer(bytearray(data[1024:1024 + 2 * count]), dtype=torch.int16)
    tokens = raw.to(torch.int64) & 0xFFFF
    if int(tokens.max()) >= vocab:
        raise SystemExit(f"{path}: token {int(tokens.max())} >= vocabulary {vocab}")
    return tokens


if torch is not None:

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
        def __init__(self, l, h, c, t, vocab, checkpointing):
            super().__init__()
            self.vocab = vocab
            vp = (vocab + 127) // 128 * 128
            self.wte, self.wpe = nn.Embedding(vp, c), nn.Embedding(t, c)
            self.blocks = nn.ModuleList(Block(c, h) for _ in range(l))
            self.lnf = nn.LayerNorm(c)
            self.checkpointing = checkpointing
            # GPT-2 initialisation, as the Mantissa model: N(0, 0.02), residual
            # projections scaled by 1/sqrt(2L), zero biases.
            for name, prm in self.named_parameters():
                if name.endswith("bias"):
                    nn.init.zeros_(prm)
                elif prm.dim() >= 2:
                    std = 0.02 / math.sqrt(2 * l) if name.endswith(("proj.weight",)) else 0.02
                    nn.init.normal_(prm, 0.0, std)

        def forward(self, ids, targets):
            x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
            for blk in self.blocks:
                if self.checkpointing and self.training:
                    x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
                else:
                    x = blk(x)
            logits = self.lnf(x) @ self.wte.weight.T
            logits = logits[..., :self.vocab]  # the padding is not a class
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                                   targets.reshape(-1))

    AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}

    def set_matmul_mode(prec):
        tf32 = prec == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32

    def gemm_peak(prec, n, device):
        """Best matmul FLOP/s at n^3 on random operands in `prec`'s format."""
        set_matmul_mode(prec)
        dtype = AUTOCAST.get(prec, torch.float32)
        g = torch.Generator(device=device).manual_seed(0)
        a = torch.rand(n, n, device=device, generator=g, dtype=torch.float32).to(dtype)
        b = torch.rand(n, n, device=device, generator=g, dtype=torch.float32).to(dtype)
        torch.matmul(a, b)
        best = 0.0
        for _ in range(5):
            sync(device)
            t0 = time.perf_counter()
            for _ in range(3):
                torch.matmul(a, b)
            sync(device)
            best = max(best, 3 * 2.0 * n ** 3 / (time.perf_counter() - t0))
        del a, b
        return best

    def sync(device):
        if device == "cuda":
            torch.cuda.synchronize()

    class Config:
        """One (precision, checkpointing) model with its optimizer and step."""

        def __init__(self, args, prec, ckpt, device, compiled):
            torch.manual_seed(0)
            self.prec, self.ckpt, self.device = prec, ckpt, device
            self.model = Gpt(args.layers, args.heads, args.dim, args.seq, args.vocab,
                             ckpt).to(device)
            self.num_parameters = sum(p.numel() for p in self.model.parameters())
            self.opt = torch.optim.AdamW(self.model.parameters(), lr=3e-4, weight_decay=0.0,
                                         fused=device == "cuda")
            self.forward = torch.compile(self.model) if compiled else self.model
            self.compiled = compiled
            self.scaler = torch.amp.GradScaler(device, enabled=prec == "fp16")
            self.warmed = set()

        def own_bytes(self):
            """Device bytes this configuration keeps between steps: weights,
            gradients and optimizer state (other configurations stay
            resident in the two-phase mode and are not counted)."""
            tensors = [p for p in self.model.parameters()]
            tensors += [p.grad for p in self.model.parameters() if p.grad is not None]
            for state in self.opt.state.values():
                tensors += [v for v in state.values() if torch.is_tensor(v)]
            return sum(t.numel() * t.element_size() for t in tensors if t.device.type == "cuda")

        def step(self, x, y):
            set_matmul_mode(self.prec)
            dtype = AUTOCAST.get(self.prec)
            with torch.autocast(self.device, dtype=dtype or torch.float32,
                                enabled=dtype is not None):
                loss = self.forward(x, y)
            self.opt.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
            return loss

    class Batches:
        """Consecutive (x, y) windows of the token stream, as llm.c reads them;
        each batch is copied host -> device like a real training loop."""

        def __init__(self, tokens, device, dynamic_batch):
            self.tokens, self.device, self.pos = tokens, device, 0
            self.dynamic_batch = dynamic_batch
            if device == "cuda":
                self.tokens = self.tokens.pin_memory()

        def next(self, b, t):
            n = b * t + 1
            if self.pos + n > self.tokens.numel():
                self.pos = 0
            w = self.tokens[self.pos:self.pos + n]
            self.pos += b * t
            w = w.to(self.device, non_blocking=True)
            x, y = w[:-1].view(b, t), w[1:].view(b, t)
            if self.dynamic_batch:  # one compile for every batch size
                torch._dynamo.mark_dynamic(x, 0)
                torch._dynamo.mark_dynamic(y, 0)
            return x, y


def main(argv):
    args = parse_args(argv)
    if torch is None:
        print("skipped: torch not installed", flush=True)
        return 0
    device = "cuda" if args.device == "cuda" else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        print("skipped: torch has no CUDA device", flush=True)
        return 0
    compiled = args.compile == "on" or (args.compile == "auto" and device == "cuda")
    batches = [int(b) for b in args.batches.split(",") if b]
    precs = [p for p in args.precisions.split(",") if p]
    ckpts = [c == "on" for c in args.checkpointing.split(",") if c]
    datasheet = parse_peaks(args.datasheet)
    need = max(batches) * args.seq * (args.warmup + args.steps + 2) + 1
    data = Batches(read_tokens(args.data, args.vocab, need), device, compiled)
    engine = "torch.compile" if compiled else "eager"
    print(f"# torch {torch.__version__}, {engine}, device "
          f"{torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}", flush=True)

    peaks = {}

    def measure_peaks():  # with the GPU to ourselves (after phase 1)
        if args.gemm_size > 0:
            for prec in precs:
                peaks[prec] = gemm_peak(prec, args.gemm_size, device)
            print("# GEMM peak TFLOP/s: " +
                  " ".join(f"{p} {v / 1e12:.1f}" for p, v in peaks.items()), flush=True)

    def expired(margin=0.0):
        return args.deadline > 0 and time.time() + margin > args.deadline

    # Priority order: what a first GPU run most wants to know comes first.
    order = [(p, c) for c in ckpts for p in ["bf16", "fp16", "tf32", "fp32"] if p in precs]
    configs = {}

    def warm(key, b):
        cfg = configs.get(key)
        if cfg is None:
            cfg = configs[key] = Config(args, key[0], key[1], device, compiled)
        if b not in cfg.warmed:
            x, y = data.next(b, args.seq)
            cfg.step(x, y)
            sync(device)
            cfg.warmed.add(b)
        return cfg

    if args.go_file:
        # Phase 1: compile and warm every configuration while other work runs.
        t0 = time.time()
        for key in order:
            for b in batches:
                if (args.stop_warm_file and os.path.exists(args.stop_warm_file)) or expired():
                    break
                t = time.time()
                try:
                    warm(key, b)
                    print(f"# warmed {key[0]} ckpt={'on' if key[1] else 'off'} batch {b} "
                          f"in {time.time() - t:.1f} s", flush=True)
                except Exception as e:  # reported again, as a row, in phase 2
                    print(f"# warm-up of {key} batch {b} failed: {type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''}", flush=True)
        for cfg in configs.values():
            cfg.opt.zero_grad(set_to_none=True)
        if device == "cuda":
            torch.cuda.empty_cache()
        warmed = [f"{k[0]}/{'ckpt' if k[1] else 'nockpt'}/{b}"
                  for k, c in configs.items() for b in sorted(c.warmed)]
        with open(args.ready_file, "w") as f:
            json.dump({"warmed": warmed, "seconds": time.time() - t0}, f)
        print(f"# phase 1 done in {time.time() - t0:.1f} s; waiting for {args.go_file}",
              flush=True)
        while not os.path.exists(args.go_file):
            if expired():
                break
            time.sleep(0.2)

    # Phase 2 (or the only phase): time every row; a configuration is freed
    # once its rows are done.
    measure_peaks()
    last_row_seconds = 0.0
    for key in order:
        prec, ckpt = key
        for b in batches:
            row = ["pytorch", prec, b, args.seq, "on" if ckpt else "off"]
            needs_compile = compiled and (key not in configs or b not in configs[key].warmed)
            margin = last_row_seconds + (60.0 if needs_compile else 0.0)
            if expired(margin):
                emit(args, row + ["skipped"] + [None] * 7 +
                     [f"time budget ({engine}{', not compiled in time' if needs_compile else ''})"])
                continue
            try:
                t_row = time.time()
                cfg = warm(key, b)
                for _ in range(max(0, args.warmup - 1)):
                    cfg.step(*data.next(b, args.seq))
                sync(device)
                if device == "cuda":
                    others = torch.cuda.memory_allocated() - cfg.own_bytes()
                    torch.cuda.reset_peak_memory_stats()
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    loss = cfg.step(*data.next(b, args.seq))
                sync(device)
                secs = time.perf_counter() - t0
                last_row_seconds = time.time() - t_row
                tps = args.steps * b * args.seq / secs
                flops_per_token = 6.0 * cfg.num_parameters + 12.0 * args.layers * args.dim * args.seq
                peak = peaks.get(prec, 0)
                ds = datasheet.get(prec)
                mem = ((torch.cuda.max_memory_allocated() - others) / 2**20
                       if device == "cuda" else None)
                emit(args, row + [
                    "ok", f"{tps:.1f}", f"{1e3 * secs / args.steps:.2f}",
                    f"{tps * flops_per_token / peak:.4f}" if peak else None,
                    f"{tps * flops_per_token / ds:.4f}" if ds else None,
                    f"{peak / 1e12:.2f}" if peak else None,
                    f"{ds / 1e12:.1f}" if ds else None,
                    f"{mem:.1f}" if mem is not None else None,
                    f"{engine} loss {float(loss.detach()):.4f}"])
            except Exception as e:
                msg = (str(e).splitlines() or [""])[0].replace(",", ";")[:200]
                emit(args, row + ["error"] + [None] * 7 + [f"{type(e).__name__}: {msg}"])
                configs.pop(key, None)
                if device == "cuda":
                    torch.cuda.empty_cache()
        configs.pop(key, None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
