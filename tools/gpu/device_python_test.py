#!/usr/bin/env python3
"""The device check finds the interpreter with torch where a GPU image keeps
it, not on PATH: a fake bundle, a PATH whose python3 has no torch (run with
-S, so not even an installed one counts), and a real venv under a search
root (/opt/<image>/.venv, and in a second case a venv deep in a tree that
only its pyvenv.cfg gives away) holding a stand-in `torch` package (version
2.11.0+cu130, CUDA 13.0, no CUDA device) and NVIDIA wheel folders with
cuBLAS and cuDNN. The check runs its env and torch parts and must:
  - write environment.txt with the interpreter section first, naming the
    venv's python3, its torch and CUDA versions and every candidate tried
    (PATH's first), then every CUDA library's path, from the venv's wheels;
  - record env/python as PASS with the venv's interpreter;
  - run PyTorch's rows with that interpreter (its command line in
    check.log), which say the stand-in torch has no CUDA device."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

RUNFILES = os.environ.get("TEST_SRCDIR", "")


def runfile(path):
    for base in (os.path.join(RUNFILES, "mantissa"), os.path.dirname(os.path.abspath(__file__)) + "/../.."):
        p = os.path.join(base, path)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(path)


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def read(path):
    with open(path) as f:
        return f.read()


# Enough of torch for the probe and for gpt2_torch_bench.py to import and
# find no CUDA device.
FAKE_TORCH = {
    "torch/__init__.py": "__version__ = '2.11.0+cu130'\nbfloat16 = 'bfloat16'\n"
                         "float16 = 'float16'\nfrom . import version, cuda, nn, utils\n",
    "torch/version.py": "cuda = '13.0'\n",
    "torch/cuda.py": "def is_available():\n    return False\n",
    "torch/nn/__init__.py": "class Module:\n    pass\nfrom . import functional\n",
    "torch/nn/functional.py": "",
    "torch/utils/__init__.py": "from . import checkpoint\n",
    "torch/utils/checkpoint.py": "",
    "torch/lib/.keep": "",
}


class FindsTorchAwayFromPathTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.bundle = os.path.join(self.tmp, "bundle")
        for src, dest in (("tools/gpu/device_check.py", "scripts/device_check.py"),
                          ("tools/gpu/device_env.py", "scripts/device_env.py"),
                          ("tools/benchmarks/make_token_shard.py", "scripts/make_token_shard.py"),
                          ("tools/benchmarks/gpt2_torch_bench.py", "scripts/gpt2_torch_bench.py")):
            write(os.path.join(self.bundle, dest), read(runfile(src)), 0o755)
        os.makedirs(os.path.join(self.bundle, "bin"))
        os.makedirs(os.path.join(self.bundle, "lib"))
        # PATH: python3 and python without any torch.
        self.path_dir = os.path.join(self.tmp, "path")
        for name in ("python3", "python"):
            write(os.path.join(self.path_dir, name),
                  f"#!/bin/sh\nexec '{sys.executable}' -S \"$@\"\n", 0o755)
        self.root = os.path.join(self.tmp, "opt")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def make_venv(self, prefix):
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", prefix], check=True)
        site = subprocess.run([os.path.join(prefix, "bin", "python3"), "-c",
                               "import json, sys; print(json.dumps([p for p in sys.path "
                               "if p.endswith('-packages')]))"],
                              capture_output=True, text=True, check=True)
        site = json.loads(site.stdout)[0]
        for rel, text in FAKE_TORCH.items():
            write(os.path.join(site, rel), text)
        for rel in ("nvidia/cu13/lib/libcublasLt.so.13", "nvidia/cu13/lib/libcublas.so.13",
                    "nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cudnn/lib/libcudnn.so.9"):
            write(os.path.join(site, rel), "")
        return os.path.join(prefix, "bin", "python3"), site

    def run_check(self):
        results = os.path.join(self.tmp, "results")
        env = dict(os.environ, PATH=self.path_dir)
        for var in ("VIRTUAL_ENV", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH", "PYTHONPATH"):
            env.pop(var, None)
        p = subprocess.run([sys.executable, os.path.join(self.bundle, "scripts", "device_check.py"),
                            f"--results={results}", "--parts=env,torch",
                            f"--search_roots={self.root}"],
                           env=env, capture_output=True, text=True, timeout=120)
        return p, results

    def check_found(self, python, site):
        p, results = self.run_check()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        env_txt = read(os.path.join(results, "environment.txt"))
        # The interpreter first, then the libraries.
        self.assertLess(env_txt.index("Python with torch"), env_txt.index("CUDA libraries used"))
        self.assertIn(f"  chosen: {python}\n", env_txt)
        self.assertIn("torch 2.11.0+cu130, torch's CUDA 13.0", env_txt)
        tried = env_txt.split("candidates tried, in order:\n")[1].splitlines()
        self.assertTrue(tried[0].startswith(f"    {self.path_dir}/python3: Python "), tried)
        self.assertIn("no torch", tried[0])
        self.assertIn(f"libcublasLt.so.13: {site}/nvidia/cu13/lib/libcublasLt.so.13", env_txt)
        self.assertIn(f"libcudnn.so.9: {site}/nvidia/cudnn/lib/libcudnn.so.9", env_txt)
        tsv = read(os.path.join(results, "results.tsv"))
        self.assertRegex(tsv, r"\tenv\tpython\tPASS\t0\t" + python + ": Python ")
        # PyTorch's rows ran with the venv's interpreter.
        log = read(os.path.join(results, "check.log"))
        self.assertIn(f"[pytorch] $ {python} -u ", log)
        self.assertIn("[pytorch] skipped: torch has no CUDA device", log)
        self.assertRegex(tsv, r"\ttorch\tpytorch bf16 B=16 ckpt=off\tSKIPPED\t\d+\ttorch has no "
                              r"CUDA device")

    def test_finds_the_venv_of_a_pytorch_image(self):
        self.check_found(*self.make_venv(os.path.join(self.root, "torchimage", ".venv")))

    def test_finds_a_venv_only_its_pyvenv_cfg_gives_away(self):
        self.check_found(*self.make_venv(os.path.join(self.root, "a", "b", "envs", "torch")))


if __name__ == "__main__":
    unittest.main()
