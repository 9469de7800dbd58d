"""The GPT-2 tools treat a run folder as the unit of work (real binaries).

Trains a byte-level run (fortunes) and a SentencePiece run with `train`, then:
  - export_hf, export_llmc and sample take the folder (its latest), a `~/`
    path (HOME set to the test's folder) and a checkpoint file alike, with no
    --vocab_size: the folder's saved config and tokenizer.model say it;
    --vocab_size given still wins;
  - a folder that is not a run, and a run whose folder does not say its
    vocabulary (no saved config; a shards run without data.vocab_size), are
    one error line naming what is missing, and nothing is written;
  - import_hf and import_llmc write a run folder of train's shape
    (checkpoint-0, latest the same file, train_config.txtpb describing the
    model: gpt2, the options the import used, precision, optimizer, seed,
    data); `train --config=FOLDER/train_config.txtpb --resume_from=FOLDER`
    continues it; a SentencePiece HF folder's tokenizer.model becomes the
    run's, and exporting the imported run gives the same tokenizer.json and
    llm.c bytes back;
  - an output folder holding another run's work is refused in one line
    unless --overwrite_output_dir; --output=FOLDER/latest (the older form)
    means FOLDER, with a note.

  args: train export_hf export_llmc sample import_hf import_llmc
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

TRAIN, EXPORT_HF, EXPORT_LLMC, SAMPLE, IMPORT_HF, IMPORT_LLMC = [
    os.path.abspath(a) for a in sys.argv[1:7]]


def run(*cmd, env=None):
    # errors="replace": sample prints what an untrained model makes of bytes.
    r = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace", env=env)
    if r.returncode != 0:
        raise AssertionError(" ".join(cmd) + " failed:\n" + r.stdout + r.stderr)
    return r


def read(path):
    with open(path, "rb") as f:
        return f.read()


def llmc_header(path):
    return struct.unpack("<8i", read(path)[:32])


def saved_config(folder):
    """The top-level and data fields of a run's train_config.txtpb, as text."""
    text = read(os.path.join(folder, "train_config.txtpb")).decode()
    fields = dict(re.findall(r'^(\w+): "?([^"\n]*)"?$', text, re.M))
    data = re.search(r"^data \{\n(.*?)^\}", text, re.M | re.S).group(1)
    fields.update({"data." + k: v for k, v in re.findall(r'^  (\w+): "?([^"\n]*)"?$', data, re.M)})
    optimizer = re.search(r"^optimizer \{\n(.*?)^\}", text, re.M | re.S).group(1)
    fields["optimizer.name"] = re.search(r'name: "(\w+)"', optimizer).group(1)
    return fields


class RunFolderToolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.cache = os.path.join(cls.tmp, "cache")
        cls.common = ["--model=gpt2", "--device=cpu", "--precision=fp32", "--eval_every=0",
                      "--progress=plain", "--cache_dir=" + cls.cache]
        cls.bytes_run = os.path.join(cls.tmp, "bytes")
        run(TRAIN, *cls.common, "--steps=3", "--checkpoint_dir=" + cls.bytes_run)
        text = os.path.join(cls.tmp, "text.txt")
        with open(text, "w") as f:
            for i in range(200):
                f.write(f"the quick brown fox {i} jumps over the lazy dog\n")
        cls.sp_run = os.path.join(cls.tmp, "sp")
        run(TRAIN, *cls.common, "--steps=2", "--checkpoint_dir=" + cls.sp_run,
            "--dataset=text", "--text_path=" + text, "--tokenizer=sentencepiece",
            "--vocab_size=300")

    def fail_one_line(self, tool, *args):
        """Runs a command that must fail; returns its one stderr line."""
        r = subprocess.run([tool, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertTrue(r.stderr.startswith(os.path.basename(tool) + ": error: "), r.stderr)
        return r.stderr

    def out(self, name):
        return os.path.join(self.tmp, name)

    def test_exports_take_the_folder_a_tilde_path_and_a_file_alike(self):
        home = dict(os.environ, HOME=self.tmp)
        for i, given in enumerate([self.bytes_run, "~/bytes", self.bytes_run + "/latest",
                                   self.bytes_run + "/checkpoint-3"]):
            hf, bin_ = self.out(f"hf_form{i}"), self.out(f"form{i}.bin")
            r = run(EXPORT_HF, "--input=" + given, "--output=" + hf, env=home)
            self.assertIn("vocabulary 256", r.stdout)
            self.assertIn("tokenizer: byte-level", r.stdout)
            run(EXPORT_LLMC, "--input=" + given, "--output=" + bin_, env=home)
            self.assertEqual(llmc_header(bin_)[3], 256)
            if i:
                self.assertEqual(read(hf + "/model.safetensors"),
                                 read(self.out("hf_form0") + "/model.safetensors"))
                self.assertEqual(read(bin_), read(self.out("form0.bin")))
            r = run(SAMPLE, "--checkpoint=" + given, "--prompt=The ", "--tokens=5", env=home)
            self.assertIn(f"sample: checkpoint {self.bytes_run}/", r.stderr)
        # ~ in --output too.
        run(EXPORT_HF, "--input=~/bytes", "--output=~/hf_tilde_out", env=home)
        self.assertTrue(os.path.exists(self.out("hf_tilde_out") + "/tokenizer.json"))
        # A flag given wins over the folder.
        run(EXPORT_LLMC, "--input=" + self.bytes_run, "--output=" + self.out("v200.bin"),
            "--vocab_size=200")
        self.assertEqual(llmc_header(self.out("v200.bin"))[3], 200)

    def test_a_sentencepiece_folder_needs_no_vocab_size(self):
        r = run(EXPORT_LLMC, "--input=" + self.sp_run, "--output=" + self.out("sp.bin"))
        self.assertEqual(llmc_header(self.out("sp.bin"))[3], 300)
        self.assertEqual(llmc_header(self.out("sp.bin"))[7], 384)
        r = run(EXPORT_HF, "--input=" + self.sp_run, "--output=" + self.out("hf_sp"))
        self.assertIn("tokenizer: SentencePiece BPE, 300 pieces", r.stdout)
        r = run(SAMPLE, "--checkpoint=" + self.sp_run, "--prompt=the quick ", "--tokens=5")
        self.assertIn(f"sample: tokenizer {self.sp_run}/tokenizer.model", r.stderr)

    def test_a_folder_that_is_not_a_run_is_one_line(self):
        empty = self.out("not_a_run")
        os.makedirs(empty, exist_ok=True)
        for tool, flag, extra in ((EXPORT_HF, "--input", ["--output=" + self.out("x_hf")]),
                                  (EXPORT_LLMC, "--input", ["--output=" + self.out("x.bin")]),
                                  (SAMPLE, "--checkpoint", [])):
            line = self.fail_one_line(tool, f"{flag}={empty}", *extra)
            self.assertIn(f"{flag}={empty} is a folder without a 'latest' checkpoint "
                          "(not a run folder", line)
        self.assertFalse(os.path.exists(self.out("x_hf")))
        self.assertFalse(os.path.exists(self.out("x.bin")))

    def test_a_missing_vocabulary_names_the_flag(self):
        # The SentencePiece run's checkpoint (wte 384 rows for 300 tokens)
        # without its config and tokenizer: nothing says the vocabulary.
        bare = self.out("bare")
        os.makedirs(bare, exist_ok=True)
        shutil.copy(self.sp_run + "/latest", bare + "/latest")
        line = self.fail_one_line(EXPORT_HF, "--input=" + bare, "--output=" + self.out("b_hf"))
        self.assertIn("cannot tell the real vocabulary: wte's 384 rows fit any of 257..384, "
                      f"and {bare} has no train_config.txtpb to say it; pass --vocab_size=N", line)
        self.fail_one_line(SAMPLE, "--checkpoint=" + bare)
        self.assertFalse(os.path.exists(self.out("b_hf")))
        # A shards run that did not give --vocab_size.
        shards = self.out("shards_run")
        os.makedirs(shards, exist_ok=True)
        shutil.copy(self.sp_run + "/latest", shards + "/latest")
        config = read(self.sp_run + "/train_config.txtpb").decode()
        config = config.replace('dataset: "text"', 'dataset: "shards"')
        config = re.sub(r"vocab_size: \d+", "vocab_size: 0", config)
        config = config.replace('tokenizer: "sentencepiece"', 'tokenizer: "bytes"')
        config = re.sub(r'tokenizer_model: "[^"]*"', 'tokenizer_model: ""', config)
        with open(shards + "/train_config.txtpb", "w") as f:
            f.write(config)
        line = self.fail_one_line(EXPORT_LLMC, "--input=" + shards, "--output=" + self.out("s.bin"))
        self.assertIn("the run trained on --dataset=shards without --vocab_size; "
                      "pass --vocab_size=N", line)
        run(EXPORT_LLMC, "--input=" + shards, "--output=" + self.out("s.bin"), "--vocab_size=300")
        self.assertEqual(llmc_header(self.out("s.bin"))[3], 300)

    def test_import_hf_writes_a_run_folder_train_continues(self):
        hf = self.out("hf_for_import")
        run(EXPORT_HF, "--input=" + self.bytes_run, "--output=" + hf)
        folder = self.out("imported")
        r = run(IMPORT_HF, "--input=" + hf, "--output=" + folder)
        self.assertIn("is byte-level (id = byte)", r.stdout)
        self.assertIn("continue it: train --resume_from=" + folder, r.stdout)
        self.assertEqual(sorted(n for n in os.listdir(folder) if not n.startswith(".")),
                         ["checkpoint-0", "latest", "train_config.txtpb"])
        self.assertTrue(os.path.samefile(folder + "/checkpoint-0", folder + "/latest"))
        c = saved_config(folder)
        self.assertEqual(c["model"], "gpt2")
        self.assertEqual(c["model_options"], "n_layer=2,n_head=4,d_model=64,seq_len=64")
        self.assertEqual((c["precision"], c["optimizer.name"], c["seed"]), ("fp32", "adamw", "1234"))
        self.assertEqual((c["data.dataset"], c["data.tokenizer"], c["data.seq_len"]),
                         ("fortunes", "bytes", "64"))
        self.assertEqual(c["checkpoint_dir"], folder)
        # The saved config is what train continues the run with.
        r = run(TRAIN, "--config=" + folder + "/train_config.txtpb", "--resume_from=" + folder,
                "--steps=2", "--device=cpu", "--eval_every=0", "--progress=plain",
                "--cache_dir=" + self.cache)
        self.assertTrue(os.path.exists(folder + "/checkpoint-2"), r.stdout + r.stderr)
        # Its folder now holds a run's work: refused, nothing touched.
        before = read(folder + "/latest")
        line = self.fail_one_line(IMPORT_HF, "--input=" + hf, "--output=" + folder)
        self.assertIn(f"--output={folder} holds another run's work (latest = step 2", line)
        self.assertIn("--overwrite_output_dir", line)
        self.assertEqual(read(folder + "/latest"), before)
        r = run(IMPORT_HF, "--input=" + hf, "--output=" + folder, "--overwrite_output_dir")
        self.assertIn("--overwrite_output_dir: removed checkpoint-0, checkpoint-2", r.stdout)
        self.assertEqual(sorted(n for n in os.listdir(folder) if not n.startswith(".")),
                         ["checkpoint-0", "latest", "train_config.txtpb"])
        # Exported again: the same model and tokenizer.
        again = self.out("hf_again")
        run(EXPORT_HF, "--input=" + folder, "--output=" + again)
        for name in ("model.safetensors", "config.json", "tokenizer.json", "vocab.json"):
            self.assertEqual(read(hf + "/" + name), read(again + "/" + name), name)

    def test_import_hf_keeps_a_sentencepiece_tokenizer(self):
        hf = self.out("hf_sp_for_import")
        run(EXPORT_HF, "--input=" + self.sp_run, "--output=" + hf)
        folder = self.out("imported_sp")
        r = run(IMPORT_HF, "--input=" + hf, "--output=" + folder)
        self.assertIn("(SentencePiece bpe, 300 pieces) is the run's tokenizer", r.stdout)
        self.assertEqual(read(folder + "/tokenizer.model"), read(self.sp_run + "/tokenizer.model"))
        c = saved_config(folder)
        self.assertEqual((c["data.dataset"], c["data.tokenizer"], c["data.tokenizer_model"],
                          c["data.vocab_size"]),
                         ("text", "sentencepiece", folder + "/tokenizer.model", "300"))
        again = self.out("hf_sp_again")
        run(EXPORT_HF, "--input=" + folder, "--output=" + again)
        for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json",
                     "tokenizer.model"):
            self.assertEqual(read(hf + "/" + name), read(again + "/" + name), name)

    def test_import_llmc_writes_a_run_folder_and_the_older_form_still_works(self):
        bin_ = self.out("for_import.bin")
        run(EXPORT_LLMC, "--input=" + self.bytes_run, "--output=" + bin_)
        folder = self.out("llmc_run")
        r = run(IMPORT_LLMC, "--input=" + bin_, "--output=" + folder + "/latest",
                "--model_options=n_layer=2,n_head=4,d_model=64,seq_len=64", "--seed=7")
        self.assertIn(f"note: --output={folder}/latest names a file; the import writes the run "
                      f"folder {folder}", r.stderr)
        self.assertTrue(os.path.samefile(folder + "/checkpoint-0", folder + "/latest"))
        c = saved_config(folder)
        self.assertEqual((c["model_options"], c["seed"]),
                         ("n_layer=2,n_head=4,d_model=64,seq_len=64", "7"))
        run(EXPORT_LLMC, "--input=" + folder, "--output=" + self.out("again.bin"))
        self.assertEqual(read(self.out("again.bin")), read(bin_))
        line = self.fail_one_line(IMPORT_LLMC, "--input=" + bin_, "--output=" + self.bytes_run)
        self.assertIn("holds another run's work (latest = step 3", line)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
