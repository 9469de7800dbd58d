#!/usr/bin/env python3
"""Hugging Face loads Mantissa's GPT-2 export and computes Mantissa's logits.

Trains gpt2-tiny for a few steps on the CPU backend (bin/train), exports the
checkpoint with bin/export_hf, writes Mantissa's logits on a prompt with
bin/sample --logits_out, then loads the export with transformers'
GPT2LMHeadModel (fp32, eager attention, CPU) and compares its logits on the
same tokens. Both sides compute in fp32, so the gap is summation order:
the check passes when max |difference| <= --tolerance (1e-4) and every
value is finite. Exit status 0 pass, 1 fail, 2 skipped (no torch or
transformers in this Python: the device check runs it with the image's).

  hf_logits_check.py --bin=BUNDLE/bin --work=DIR
"""
import argparse
import os
import subprocess
import sys

PROMPT = "the quick brown fox jumps over the lazy dog, twice"


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print("FAIL: " + " ".join(cmd) + "\n" + r.stdout)
        sys.exit(1)
    return r.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", required=True, help="folder with train, export_hf, sample")
    p.add_argument("--work", required=True, help="scratch folder")
    p.add_argument("--tolerance", type=float, default=1e-4)
    a = p.parse_args()
    try:
        import numpy as np
        import torch
        from transformers import GPT2LMHeadModel
    except ImportError as e:
        print(f"SKIPPED: {e} (needs numpy, torch and transformers)")
        return 2
    os.makedirs(a.work, exist_ok=True)
    text = os.path.join(a.work, "text.txt")
    with open(text, "w") as f:
        for i in range(300):
            f.write(f"the quick brown fox {i} jumps over the lazy dog\n")
    run([os.path.join(a.bin, "train"), "--model=gpt2",
         "--model_options=n_layer=2,n_head=4,d_model=64,seq_len=64", "--dataset=text",
         "--text_path=" + text, "--steps=5", "--eval_every=0", "--progress=none", "--device=cpu",
         "--checkpoint_dir=" + os.path.join(a.work, "run"),
         "--cache_dir=" + os.path.join(a.work, "cache")])
    hf = os.path.join(a.work, "hf")
    run([os.path.join(a.bin, "export_hf"), "--input=" + os.path.join(a.work, "run", "latest"),
         "--output=" + hf])
    npy = os.path.join(a.work, "mantissa_logits.npy")
    run([os.path.join(a.bin, "sample"), "--checkpoint=" + os.path.join(a.work, "run"),
         "--prompt=" + PROMPT, "--logits_out=" + npy])
    ours = np.load(npy)
    model = GPT2LMHeadModel.from_pretrained(hf, torch_dtype=torch.float32,
                                            attn_implementation="eager").eval()
    ids = torch.tensor([list(PROMPT.encode("utf-8"))])
    with torch.no_grad():
        theirs = model(ids).logits[0].float().numpy()
    if theirs.shape != ours.shape:
        print(f"FAIL: Hugging Face logits {theirs.shape}, Mantissa's {ours.shape}")
        return 1
    diff = float(np.max(np.abs(theirs - ours)))
    finite = bool(np.all(np.isfinite(ours)) and np.all(np.isfinite(theirs)))
    verdict = "PASS" if finite and diff <= a.tolerance else "FAIL"
    print(f"{verdict}: GPT2LMHeadModel (transformers) vs Mantissa, {ours.shape[0]} positions x "
          f"{ours.shape[1]} logits: max |diff| {diff:.3g} (tolerance {a.tolerance:g}), "
          f"max |logit| {float(np.max(np.abs(ours))):.3g}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
