"""export_hf's files read back as a third party would: json + numpy only.

Trains gpt2-tiny for a few steps, exports the checkpoint with export_hf
(fp32 and bf16) and with export_llmc (fp32), and checks that every tensor of
model.safetensors is the llm.c file's tensor under Hugging Face's name and
layout (Conv1D weights transposed, wte without padding rows): fp32 bit for
bit, bf16 as fp32 rounded to nearest even; that config.json describes the
same model; and that import_hf then export_hf gives the same bytes back.

Also runs GPT-2's forward pass in numpy the way transformers' GPT2LMHeadModel
does (Conv1D: x @ weight + bias; gelu_new; layer norm eps 1e-5; tied
lm_head) on the exported tensors, and compares with Mantissa's own logits
(sample --logits_out): what the device check does with transformers itself.

  args: train export_hf import_hf export_llmc sample
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

TRAIN, EXPORT_HF, IMPORT_HF, EXPORT_LLMC, SAMPLE = [os.path.abspath(a) for a in sys.argv[1:6]]
OPTIONS = "n_layer=2,n_head=4,d_model=64,seq_len=64"


def read_safetensors(path):
    """(header, {name: float32 array}) of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    base = 8 + n
    tensors = {}
    end_of_data = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        end_of_data = max(end_of_data, end)
        raw = data[base + begin:base + end]
        if entry["dtype"] == "F32":
            array = np.frombuffer(raw, dtype="<f4")
        elif entry["dtype"] == "BF16":
            array = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise AssertionError("unexpected dtype " + entry["dtype"])
        tensors[name] = array.reshape(entry["shape"])
    assert base + end_of_data == len(data), "bytes after the last tensor"
    return header, tensors


def read_llmc(path):
    """(header ints, {llm.c name: float32 array}) of an llm.c version-3 file."""
    with open(path, "rb") as f:
        data = f.read()
    h = np.frombuffer(data[:1024], dtype="<i4")
    assert h[0] == 20240326 and h[1] == 3, h[:2]
    seq, vocab, layers, heads, channels, padded = (int(x) for x in h[2:8])
    c = channels
    shapes = [("wte", (padded, c)), ("wpe", (seq, c)), ("ln1w", (layers, c)),
              ("ln1b", (layers, c)), ("qkvw", (layers, 3 * c, c)), ("qkvb", (layers, 3 * c)),
              ("attprojw", (layers, c, c)), ("attprojb", (layers, c)), ("ln2w", (layers, c)),
              ("ln2b", (layers, c)), ("fcw", (layers, 4 * c, c)), ("fcb", (layers, 4 * c)),
              ("fcprojw", (layers, c, 4 * c)), ("fcprojb", (layers, c)), ("lnfw", (c,)),
              ("lnfb", (c,))]
    flat = np.frombuffer(data[1024:], dtype="<f4")
    params, at = {}, 0
    for name, shape in shapes:
        size = int(np.prod(shape))
        params[name] = flat[at:at + size].reshape(shape)
        at += size
    assert at == flat.size, "llm.c file size"
    return dict(seq=seq, vocab=vocab, layers=layers, heads=heads, channels=channels), params


def expected_hf(info, p):
    """The HF state dict the llm.c parameters make (what export_hf must write)."""
    out = {"transformer.wte.weight": p["wte"][:info["vocab"]], "transformer.wpe.weight": p["wpe"]}
    for l in range(info["layers"]):
        b = f"transformer.h.{l}."
        out[b + "ln_1.weight"] = p["ln1w"][l]
        out[b + "ln_1.bias"] = p["ln1b"][l]
        out[b + "attn.c_attn.weight"] = p["qkvw"][l].T
        out[b + "attn.c_attn.bias"] = p["qkvb"][l]
        out[b + "attn.c_proj.weight"] = p["attprojw"][l].T
        out[b + "attn.c_proj.bias"] = p["attprojb"][l]
        out[b + "ln_2.weight"] = p["ln2w"][l]
        out[b + "ln_2.bias"] = p["ln2b"][l]
        out[b + "mlp.c_fc.weight"] = p["fcw"][l].T
        out[b + "mlp.c_fc.bias"] = p["fcb"][l]
        out[b + "mlp.c_proj.weight"] = p["fcprojw"][l].T
        out[b + "mlp.c_proj.bias"] = p["fcprojb"][l]
    out["transformer.ln_f.weight"] = p["lnfw"]
    out["transformer.ln_f.bias"] = p["lnfb"]
    return out


def bf16_round(x):
    """fp32 -> bf16 (round to nearest even) -> fp32, for finite values."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)


def hf_gpt2_logits(t, config, ids):
    """GPT2LMHeadModel's forward in float64 numpy on HF-named tensors `t`."""
    def layer_norm(x, w, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + config["layer_norm_epsilon"]) * w + b

    def gelu_new(x):
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))

    g = {k: v.astype(np.float64) for k, v in t.items()}
    n, heads = len(ids), config["n_head"]
    x = g["transformer.wte.weight"][ids] + g["transformer.wpe.weight"][:n]
    mask = np.triu(np.full((n, n), -np.inf), 1)
    for l in range(config["n_layer"]):
        b = f"transformer.h.{l}."
        h = layer_norm(x, g[b + "ln_1.weight"], g[b + "ln_1.bias"])
        qkv = h @ g[b + "attn.c_attn.weight"] + g[b + "attn.c_attn.bias"]
        q, k, v = np.split(qkv, 3, axis=-1)
        split = lambda a: a.reshape(n, heads, -1).transpose(1, 0, 2)
        q, k, v = split(q), split(k), split(v)
        att = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]) + mask
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ v).transpose(1, 0, 2).reshape(n, -1)
        x = x + y @ g[b + "attn.c_proj.weight"] + g[b + "attn.c_proj.bias"]
        h = layer_norm(x, g[b + "ln_2.weight"], g[b + "ln_2.bias"])
        h = gelu_new(h @ g[b + "mlp.c_fc.weight"] + g[b + "mlp.c_fc.bias"])
        x = x + h @ g[b + "mlp.c_proj.weight"] + g[b + "mlp.c_proj.bias"]
    x = layer_norm(x, g["transformer.ln_f.weight"], g["transformer.ln_f.bias"])
    return x @ g["transformer.wte.weight"].T


def run(*cmd):
    r = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise AssertionError(" ".join(cmd) + " failed:\n" + r.stdout)
    return r.stdout


class HfExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        text = os.path.join(cls.tmp, "text.txt")
        with open(text, "w") as f:
            for i in range(300):
                f.write(f"the quick brown fox {i} jumps over the lazy dog\n")
        run(TRAIN, "--model=gpt2", "--model_options=" + OPTIONS, "--dataset=text",
            "--text_path=" + text, "--steps=5", "--eval_every=0", "--progress=none",
            "--checkpoint_dir=" + os.path.join(cls.tmp, "run"),
            "--cache_dir=" + os.path.join(cls.tmp, "cache"))
        cls.ckpt = os.path.join(cls.tmp, "run")  # the run folder: its latest
        cls.llmc = os.path.join(cls.tmp, "model.bin")
        run(EXPORT_LLMC, "--input=" + cls.ckpt, "--output=" + cls.llmc)
        cls.hf32 = os.path.join(cls.tmp, "hf32")
        cls.hf16 = os.path.join(cls.tmp, "hf16")
        run(EXPORT_HF, "--input=" + cls.ckpt, "--output=" + cls.hf32)
        run(EXPORT_HF, "--input=" + cls.ckpt, "--output=" + cls.hf16, "--dtype=bf16")
        cls.info, cls.params = read_llmc(cls.llmc)
        cls.expected = expected_hf(cls.info, cls.params)

    def test_fp32_tensors_are_the_llmc_tensors_bit_for_bit(self):
        _, tensors = read_safetensors(os.path.join(self.hf32, "model.safetensors"))
        self.assertEqual(sorted(tensors), sorted(self.expected))
        for name, want in self.expected.items():
            got = tensors[name]
            self.assertEqual(got.shape, want.shape, name)
            self.assertTrue(np.all(np.isfinite(got)), name)
            self.assertTrue(np.array_equal(got.view(np.uint32),
                                           np.ascontiguousarray(want).view(np.uint32)), name)

    def test_bf16_tensors_are_rounded_to_nearest_even(self):
        header, tensors = read_safetensors(os.path.join(self.hf16, "model.safetensors"))
        for name, want in self.expected.items():
            self.assertEqual(header[name]["dtype"], "BF16")
            self.assertTrue(np.array_equal(tensors[name].view(np.uint32),
                                           bf16_round(want).view(np.uint32)), name)

    def test_config_describes_the_model(self):
        for folder, dtype in ((self.hf32, "float32"), (self.hf16, "bfloat16")):
            with open(os.path.join(folder, "config.json")) as f:
                config = json.load(f)
            self.assertEqual(config["model_type"], "gpt2")
            self.assertEqual(config["architectures"], ["GPT2LMHeadModel"])
            self.assertEqual(config["vocab_size"], self.info["vocab"])
            self.assertEqual(config["n_positions"], self.info["seq"])
            self.assertEqual(config["n_embd"], self.info["channels"])
            self.assertEqual(config["n_layer"], self.info["layers"])
            self.assertEqual(config["n_head"], self.info["heads"])
            self.assertEqual(config["activation_function"], "gelu_new")
            self.assertEqual(config["layer_norm_epsilon"], 1e-5)
            self.assertTrue(config["tie_word_embeddings"])
            self.assertEqual(config["torch_dtype"], dtype)

    def test_import_then_export_gives_the_same_bytes(self):
        imported = os.path.join(self.tmp, "imported")  # a run folder
        run(IMPORT_HF, "--input=" + self.hf32, "--output=" + imported,
            "--model_options=" + OPTIONS)
        again = os.path.join(self.tmp, "hf32_again")
        run(EXPORT_HF, "--input=" + imported, "--output=" + again)
        for name in ("model.safetensors", "config.json", "tokenizer.json"):
            with open(os.path.join(self.hf32, name), "rb") as a, \
                    open(os.path.join(again, name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)
        llmc_again = os.path.join(self.tmp, "again.bin")
        run(EXPORT_LLMC, "--input=" + imported, "--output=" + llmc_again)
        with open(self.llmc, "rb") as a, open(llmc_again, "rb") as b:
            self.assertEqual(a.read(), b.read(), "llm.c export after the HF round trip")

    def test_gpt2_forward_on_the_exported_tensors_gives_mantissas_logits(self):
        prompt = "the quick brown fox jumps over the lazy dog"
        npy = os.path.join(self.tmp, "logits.npy")
        run(SAMPLE, "--checkpoint=" + self.ckpt, "--prompt=" + prompt, "--logits_out=" + npy)
        ours = np.load(npy)
        with open(os.path.join(self.hf32, "config.json")) as f:
            config = json.load(f)
        _, tensors = read_safetensors(os.path.join(self.hf32, "model.safetensors"))
        want = hf_gpt2_logits(tensors, config, list(prompt.encode()))
        self.assertEqual(ours.shape, want.shape)
        self.assertTrue(np.all(np.isfinite(ours)))
        # Mantissa computes in fp32, the reference in float64.
        self.assertLess(float(np.max(np.abs(ours - want))), 1e-4)

    def test_a_bad_folder_is_one_error_line(self):
        r = subprocess.run([IMPORT_HF, "--input=" + self.tmp, "--output=" +
                            os.path.join(self.tmp, "x", "latest")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertTrue(r.stderr.startswith("import_hf: error: "), r.stderr)
        self.assertIn("model.safetensors", r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
