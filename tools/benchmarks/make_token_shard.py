#!/usr/bin/env python3
"""Writes a deterministic llm.c token shard (1024-byte header of 256 int32:
magic 20240520, version 1, token count; then uint16 tokens) that Mantissa
(--dataset=shards) and tools/benchmarks/gpt2_torch_bench.py (--data) both
read, so the two GPT-2 benchmarks train on the same tokens.

The tokens are learnable, not uniform noise: each follows its predecessor
through a fixed map plus one of four random offsets (a bigram language with
entropy ln 4), so a short training run shows its loss falling from
ln(vocab). Same arguments, same bytes, on any machine (own LCG, no numpy).

  make_token_shard.py OUT [--tokens N] [--vocab V] [--seed S]
"""
import argparse
import array
import os
import struct
import sys


def tokens(n, vocab, seed):
    state = seed & 0xFFFFFFFF
    out = array.array("H")
    prev = 0
    for _ in range(n):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        prev = (prev * 31 + 7 + (state >> 30)) % vocab
        out.append(prev)
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--tokens", type=int, default=1 << 20)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--seed", type=int, default=20240520)
    a = p.parse_args(argv)
    if not 2 <= a.vocab <= 65536 or a.tokens < 1:
        sys.exit("make_token_shard: need 2 <= vocab <= 65536 and tokens >= 1")
    body = tokens(a.tokens, a.vocab, a.seed)
    if sys.byteorder != "little":
        body.byteswap()
    header = struct.pack("<256i", 20240520, 1, a.tokens, *([0] * 253))
    tmp = a.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(header)
        f.write(body.tobytes())
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
