"""A LoRA run's adapters in PEFT's format, read back as a third party would
(json + numpy only; PEFT itself is not installed here).

Trains gpt2-tiny with --lora (fp32, 20 steps so that B is far from its
zeros), then:
  - export_hf --adapter_output: adapter_model.safetensors holds exactly the
    keys PEFT's save_pretrained writes for a GPT-2 LoRA on attn.c_attn,
    attn.c_proj, mlp.c_fc and mlp.c_proj
    (base_model.model.transformer.h.<i>.<module>.lora_A.weight [r, in] and
    .lora_B.weight [out, r]: PEFT's lora_A/lora_B are nn.Linear(in, r) and
    nn.Linear(r, out); GPT-2's Conv1D weight is [in, out], so in = its
    rows), and adapter_config.json says LORA, CAUSAL_LM, r, lora_alpha,
    fan_in_fan_out true (Conv1D), the four modules and the base folder;
  - GPT-2's forward in float64 numpy on the exported base with PEFT's LoRA
    applied the way PEFT applies it to a fan_in_fan_out layer
    (W + (B @ A).T * lora_alpha / r) gives Mantissa's own logits of the
    LoRA checkpoint (sample --logits_out), and they differ from the base
    model's (the adapters are not zero);
  - export_hf --merge_lora writes exactly that sum (fp32 rounding), every
    other tensor bit for bit the base's;
  - import_hf --adapter (the exported base and adapter) gives a run whose
    logits are the LoRA run's bit for bit, and that train --resume_from
    continues with the base frozen;
  - a LoRA run exported without either flag, and --merge_lora on a run
    without adapters, are one error line each.

  args: train export_hf import_hf sample
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

TRAIN, EXPORT_HF, IMPORT_HF, SAMPLE = [os.path.abspath(a) for a in sys.argv[1:5]]
OPTIONS = "n_layer=2,n_head=4,d_model=64,seq_len=64"
RANK, ALPHA = 4, 12
MODULES = {"attn.c_attn": (64, 192), "attn.c_proj": (64, 64), "mlp.c_fc": (64, 256),
           "mlp.c_proj": (256, 64)}  # (in, out)
PROMPT = "the quick brown fox jumps over the lazy dog"


def read_safetensors(path):
    """(header, {name: float32 array}) of an F32 safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        assert entry["dtype"] == "F32", entry["dtype"]
        tensors[name] = np.frombuffer(data[8 + n + begin:8 + n + end], dtype="<f4").reshape(
            entry["shape"])
    return header, tensors


def gpt2_logits(t, config, ids, lora=None, scale=0.0):
    """GPT2LMHeadModel's forward in float64 on HF-named tensors `t`; `lora`
    maps "transformer.h.<i>.<module>" to (A, B), applied as PEFT applies a
    fan_in_fan_out LoRA layer: x @ (W + (B @ A).T * scale)."""
    def layer_norm(x, w, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + config["layer_norm_epsilon"]) * w + b

    def gelu_new(x):
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))

    g = {k: v.astype(np.float64) for k, v in t.items()}

    def conv1d(x, module):
        w = g[module + ".weight"]
        if lora and module in lora:
            a, b = lora[module]
            w = w + (b.astype(np.float64) @ a.astype(np.float64)).T * scale
        return x @ w + g[module + ".bias"]

    n, heads = len(ids), config["n_head"]
    x = g["transformer.wte.weight"][ids] + g["transformer.wpe.weight"][:n]
    mask = np.triu(np.full((n, n), -np.inf), 1)
    for l in range(config["n_layer"]):
        b = f"transformer.h.{l}."
        h = layer_norm(x, g[b + "ln_1.weight"], g[b + "ln_1.bias"])
        q, k, v = np.split(conv1d(h, b + "attn.c_attn"), 3, axis=-1)
        split = lambda a: a.reshape(n, heads, -1).transpose(1, 0, 2)
        q, k, v = split(q), split(k), split(v)
        att = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]) + mask
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ v).transpose(1, 0, 2).reshape(n, -1)
        x = x + conv1d(y, b + "attn.c_proj")
        h = layer_norm(x, g[b + "ln_2.weight"], g[b + "ln_2.bias"])
        x = x + conv1d(gelu_new(conv1d(h, b + "mlp.c_fc")), b + "mlp.c_proj")
    x = layer_norm(x, g["transformer.ln_f.weight"], g["transformer.ln_f.bias"])
    return x @ g["transformer.wte.weight"].T


def run(*cmd):
    r = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise AssertionError(" ".join(cmd) + " failed:\n" + r.stdout)
    return r.stdout


def logits(checkpoint, out):
    run(SAMPLE, "--checkpoint=" + checkpoint, "--prompt=" + PROMPT, "--logits_out=" + out)
    return np.load(out)


class PeftExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.text = os.path.join(cls.tmp, "text.txt")
        with open(cls.text, "w") as f:
            for i in range(300):
                f.write(f"the quick brown fox {i} jumps over the lazy dog\n")
        cls.run_dir = os.path.join(cls.tmp, "run")
        run(TRAIN, "--model=gpt2", "--model_options=" + OPTIONS, "--dataset=text",
            "--text_path=" + cls.text, "--steps=20", "--lr=0.01", "--precision=fp32",
            "--batch_size=4", "--eval_every=0", "--progress=none",
            f"--lora=r={RANK},alpha={ALPHA},targets=qkvw,attprojw,fcw,fcprojw",
            "--checkpoint_dir=" + cls.run_dir, "--cache_dir=" + os.path.join(cls.tmp, "cache"))
        cls.base = os.path.join(cls.tmp, "base")
        cls.adapter = os.path.join(cls.tmp, "adapter")
        cls.merged = os.path.join(cls.tmp, "merged")
        run(EXPORT_HF, "--input=" + cls.run_dir, "--output=" + cls.base,
            "--adapter_output=" + cls.adapter)
        run(EXPORT_HF, "--input=" + cls.run_dir, "--output=" + cls.merged, "--merge_lora")
        with open(os.path.join(cls.base, "config.json")) as f:
            cls.config = json.load(f)
        _, cls.base_tensors = read_safetensors(os.path.join(cls.base, "model.safetensors"))
        cls.adapter_header, cls.adapter_tensors = read_safetensors(
            os.path.join(cls.adapter, "adapter_model.safetensors"))
        with open(os.path.join(cls.adapter, "adapter_config.json")) as f:
            cls.adapter_config = json.load(f)
        cls.lora = {}
        for l in range(cls.config["n_layer"]):
            for m in MODULES:
                key = f"base_model.model.transformer.h.{l}.{m}"
                cls.lora[f"transformer.h.{l}.{m}"] = (cls.adapter_tensors[key + ".lora_A.weight"],
                                                      cls.adapter_tensors[key + ".lora_B.weight"])
        cls.ours = logits(cls.run_dir, os.path.join(cls.tmp, "lora.npy"))

    def test_adapter_keys_and_shapes_are_pefts(self):
        want = {}
        for l in range(2):
            for m, (fan_in, fan_out) in MODULES.items():
                key = f"base_model.model.transformer.h.{l}.{m}"
                want[key + ".lora_A.weight"] = [RANK, fan_in]
                want[key + ".lora_B.weight"] = [fan_out, RANK]
                # PEFT's in_features of a Conv1D is its weight's first dim.
                self.assertEqual(list(self.base_tensors[f"transformer.h.{l}.{m}.weight"].shape),
                                 [fan_in, fan_out])
        got = {k: v["shape"] for k, v in self.adapter_header.items() if k != "__metadata__"}
        self.assertEqual(got, want)
        for name, t in self.adapter_tensors.items():
            self.assertTrue(np.all(np.isfinite(t)), name)

    def test_adapter_config_is_a_peft_lora_config(self):
        c = self.adapter_config
        self.assertEqual(c["peft_type"], "LORA")
        self.assertEqual(c["task_type"], "CAUSAL_LM")
        self.assertEqual(c["r"], RANK)
        self.assertEqual(c["lora_alpha"], ALPHA)
        self.assertEqual(c["lora_dropout"], 0.0)
        self.assertIs(c["fan_in_fan_out"], True)
        self.assertEqual(c["bias"], "none")
        self.assertIs(c["use_rslora"], False)
        self.assertEqual(sorted(c["target_modules"]), sorted(MODULES))
        self.assertEqual(c["base_model_name_or_path"], os.path.abspath(self.base))

    def test_peft_semantics_on_the_exported_files_give_mantissas_lora_logits(self):
        prompt = list(PROMPT.encode())
        want = gpt2_logits(self.base_tensors, self.config, prompt, self.lora, ALPHA / RANK)
        base_only = gpt2_logits(self.base_tensors, self.config, prompt)
        self.assertEqual(self.ours.shape, want.shape)
        self.assertTrue(np.all(np.isfinite(self.ours)))
        # Mantissa in fp32 against float64.
        self.assertLess(float(np.max(np.abs(self.ours - want))), 1e-4)
        # The adapters matter: without them the logits are elsewhere.
        self.assertGreater(float(np.max(np.abs(self.ours - base_only))), 1e-2)
        # B moved off its zeros in every module.
        for name, (_, b) in self.lora.items():
            self.assertGreater(float(np.max(np.abs(b))), 0.0, name)

    def test_merged_export_is_the_base_plus_the_peft_delta(self):
        _, merged = read_safetensors(os.path.join(self.merged, "model.safetensors"))
        self.assertEqual(sorted(merged), sorted(self.base_tensors))
        scale = ALPHA / RANK
        for name, base in self.base_tensors.items():
            module = name[:-len(".weight")]
            if name.endswith(".weight") and module in self.lora:
                a, b = self.lora[module]
                want = base.astype(np.float64) + (b.astype(np.float64) @ a.astype(np.float64)).T * scale
                err = np.max(np.abs(merged[name] - want)) / np.max(np.abs(want))
                self.assertLess(float(err), 1e-6, name)
                self.assertFalse(np.array_equal(merged[name], base), name)
            else:
                self.assertTrue(np.array_equal(merged[name].view(np.uint32), base.view(np.uint32)),
                                name)

    def test_import_with_the_adapter_gives_the_same_logits_and_trains_on(self):
        imported = os.path.join(self.tmp, "imported")
        out = run(IMPORT_HF, "--input=" + self.base, "--adapter=" + self.adapter,
                  "--output=" + imported, "--precision=fp32")
        self.assertIn(f"--lora=r={RANK},alpha={ALPHA},dropout=0,targets=qkvw,attprojw,fcw,fcprojw",
                      out)
        again = logits(imported, os.path.join(self.tmp, "imported.npy"))
        self.assertTrue(np.array_equal(again.view(np.uint32), self.ours.view(np.uint32)))
        trained = run(TRAIN, "--resume_from=" + imported, "--steps=3", "--dataset=text",
                      "--text_path=" + self.text, "--eval_every=0", "--progress=plain",
                      "--cache_dir=" + os.path.join(self.tmp, "cache"))
        self.assertIn("trainable parameters 8192 of 128768", trained)
        # The base stays, the adapters move.
        base2 = os.path.join(self.tmp, "base2")
        adapter2 = os.path.join(self.tmp, "adapter2")
        run(EXPORT_HF, "--input=" + imported, "--output=" + base2, "--adapter_output=" + adapter2)
        with open(os.path.join(self.base, "model.safetensors"), "rb") as a, \
                open(os.path.join(base2, "model.safetensors"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        _, moved = read_safetensors(os.path.join(adapter2, "adapter_model.safetensors"))
        self.assertFalse(all(np.array_equal(moved[k], v) for k, v in self.adapter_tensors.items()))

    def test_import_with_fresh_adapters_draws_what_train_draws(self):
        # Step 1 of train --lora with no weight decay leaves A as drawn
        # (B = 0 gives A no gradient in the first step).
        flags = ["--lora=r=8,alpha=16,targets=qkvw,fcw", "--seed=77", "--precision=fp32"]
        imported = os.path.join(self.tmp, "fresh_imported")
        out = run(IMPORT_HF, "--input=" + self.base, "--output=" + imported, *flags)
        self.assertIn("--lora=r=8,alpha=16,dropout=0,targets=qkvw,fcw", out)
        fresh = os.path.join(self.tmp, "fresh_run")
        run(TRAIN, "--model=gpt2", "--model_options=" + OPTIONS, "--dataset=text",
            "--text_path=" + self.text, "--steps=1", "--weight_decay=0", "--eval_every=0",
            "--progress=none", "--checkpoint_dir=" + fresh,
            "--cache_dir=" + os.path.join(self.tmp, "cache"), *flags)
        adapters = {}
        for name, folder in (("imported", imported), ("fresh", fresh)):
            out_dir = os.path.join(self.tmp, name + "_adapter")
            run(EXPORT_HF, "--input=" + folder, "--output=" + os.path.join(self.tmp, name + "_base"),
                "--adapter_output=" + out_dir)
            adapters[name] = read_safetensors(os.path.join(out_dir, "adapter_model.safetensors"))[1]
        self.assertEqual(sorted(adapters["imported"]), sorted(adapters["fresh"]))
        self.assertEqual(len(adapters["imported"]), 2 * 2 * 2)  # layers x modules x (A, B)
        for name, got in adapters["imported"].items():
            if ".lora_A." in name:
                self.assertTrue(np.array_equal(got.view(np.uint32),
                                               adapters["fresh"][name].view(np.uint32)), name)
                # PEFT's kaiming_uniform(a=sqrt(5)) bound 1/sqrt(in), and used.
                bound = 1 / np.sqrt(got.shape[1])
                self.assertLessEqual(float(np.max(np.abs(got))), bound)
                self.assertGreater(float(np.max(np.abs(got))), 0.9 * bound)
            else:
                self.assertFalse(np.any(got), name)  # B starts at zero
        # Imported at step 0, the LoRA model is the base model.
        self.assertTrue(np.array_equal(
            logits(imported, os.path.join(self.tmp, "fresh_imported.npy")),
            logits(self.base_run(), os.path.join(self.tmp, "base_run.npy"))))

    def base_run(self):
        """The exported base as a run folder of its own (no adapters)."""
        folder = os.path.join(self.tmp, "base_run")
        if not os.path.exists(folder):
            run(IMPORT_HF, "--input=" + self.base, "--output=" + folder, "--precision=fp32")
        return folder

    def test_wrong_flags_are_one_error_line(self):
        plain = os.path.join(self.tmp, "plain")
        run(TRAIN, "--model=gpt2", "--model_options=" + OPTIONS, "--dataset=text",
            "--text_path=" + self.text, "--steps=1", "--eval_every=0", "--progress=none",
            "--checkpoint_dir=" + plain, "--cache_dir=" + os.path.join(self.tmp, "cache"))
        for args, needle in (
                ([self.run_dir, "--output=" + os.path.join(self.tmp, "x")],
                 "holds LoRA adapters (r=4, alpha=12): --merge_lora writes"),
                ([plain, "--output=" + os.path.join(self.tmp, "y"), "--merge_lora"],
                 "--merge_lora: " + plain),
                ([self.run_dir, "--output=" + os.path.join(self.tmp, "z"), "--merge_lora",
                  "--adapter_output=" + os.path.join(self.tmp, "w")],
                 "--merge_lora and --adapter_output")):
            r = subprocess.run([EXPORT_HF, "--input=" + args[0]] + args[1:],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertTrue(r.stderr.startswith("export_hf: error: "), r.stderr)
            self.assertIn(needle, r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "x", "model.safetensors")))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
