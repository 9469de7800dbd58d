"""export_hf's tokenizer files, loaded with Hugging Face's `tokenizers`.

Trains three tiny gpt2 runs with the real `train` (one step each): byte-level
on the fortunes corpus, and SentencePiece BPE and Unigram on the same text
(the corpus as train writes it, read back from its byte-level shards).
Exports each with export_hf --input=RUN_FOLDER, loads tokenizer.json with
`tokenizers` (the pinned wheel, third_party/python_wheels.txt) and checks
that it encodes text to exactly Mantissa's ids and decodes them back to the
same bytes:
  - byte-level: the ids of the corpus are the train run's shard tokens and
    the `tokenize` tool's; vocab.json + merges.txt (what GPT2Tokenizer
    reads) give the same ids; no special tokens;
  - SentencePiece BPE: the ids of the whole corpus are the train run's
    shard tokens (SentencePiece's encoding of the whole text), and an odd
    text (spaces leading, doubled and trailing, tabs, newlines, control
    bytes, accents, CJK, an emoji, "<s>", "<unk>", "<0x41>") gives
    mnt_sentencepiece's ids;
  - SentencePiece Unigram: every fortune gives mnt_sentencepiece's ids
    (Unigram over a whole 100 KB text is not compared: SentencePiece sums
    the path scores in float32 and, tens of thousands of characters in,
    picks among segmentations whose scores differ below float32's
    resolution, which tokenizers' float64 resolves differently; hf_tokenizer.h);
  - tokenizer.model is the run's, byte for byte; tokenizer_config.json names
    the special tokens and split_special_tokens.

  args: train export_hf tokenize mnt_sentencepiece
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest

import tokenizers
from tokenizers import Tokenizer, models, pre_tokenizers

TRAIN, EXPORT_HF, TOKENIZE, SENTENCEPIECE = [os.path.abspath(a) for a in sys.argv[1:5]]

ODD_TEXT = ("  leading spaces,  doubled, tabs\t\tand\n\nnewlines \x01\x08\x7f "
            "caf\u00e9 \u00fcber \u65e5\u672c\u8a9e \U0001f600 trailing  ")
# Text that spells SentencePiece's control and byte pieces, which
# SentencePiece encodes as ordinary text. The BPE tokenizer.json does too;
# the Unigram one cannot where the spelled name's characters have no piece
# (no '<' in the fortunes): hf_tokenizer.h.
SPELLED_PIECES = " <s> </s> <unk> <0x41> "


def run(*cmd):
    r = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise AssertionError(" ".join(cmd) + " failed:\n" + r.stdout)
    return r.stdout


def read_shard(path):
    """The tokens of an llm.c token shard (1024-byte header, uint16 tokens)."""
    with open(path, "rb") as f:
        data = f.read()
    magic, version, count = struct.unpack("<3i", data[:12])
    assert magic == 20240520 and version == 1, (path, magic, version)
    tokens = list(struct.unpack("<%dH" % count, data[1024:1024 + 2 * count]))
    assert len(data) == 1024 + 2 * count, path
    return tokens


def shard_tokens(train_log):
    """All the tokens train encoded its text to: the train and eval shards the
    log's `tokens:` line names, in order."""
    m = re.search(r"^tokens: (\S+) \((\d+) tokens\), (\S+) \((\d+)\)$", train_log, re.M)
    assert m, train_log
    tokens = read_shard(m.group(1)) + read_shard(m.group(3))
    assert len(tokens) == int(m.group(2)) + int(m.group(4))
    return tokens


class SentencePiece:
    """Mantissa's own encoder: the mnt_sentencepiece process train and sample run."""

    def __init__(self, model, tmp):
        self.model, self.tmp = model, tmp

    def encode(self, text):
        src, dst = os.path.join(self.tmp, "sp_in"), os.path.join(self.tmp, "sp_out")
        with open(src, "wb") as f:
            f.write(text.encode("utf-8"))
        subprocess.run([SENTENCEPIECE, "encode", self.model, src, dst], check=True,
                       stdout=subprocess.DEVNULL)
        with open(dst, "rb") as f:
            data = f.read()
        return list(struct.unpack("<%di" % (len(data) // 4), data))


class HfTokenizerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cache = os.path.join(cls.tmp, "cache")
        common = ["--model=gpt2", "--device=cpu", "--precision=fp32", "--steps=1",
                  "--eval_every=0", "--progress=plain", "--cache_dir=" + cache]
        cls.bytes_run = os.path.join(cls.tmp, "bytes")
        run(TRAIN, *common, "--checkpoint_dir=" + cls.bytes_run)
        # The corpus as train made it: its byte-level shards are its bytes.
        corpus = read_shard(os.path.join(cache, "fortunes", "train_000.bin")) + \
            read_shard(os.path.join(cache, "fortunes", "val_000.bin"))
        cls.corpus_bytes = bytes(corpus)
        cls.corpus = cls.corpus_bytes.decode("utf-8")
        cls.text_path = os.path.join(cls.tmp, "fortunes.txt")
        with open(cls.text_path, "wb") as f:
            f.write(cls.corpus_bytes)
        cls.runs, cls.ids = {}, {}
        for kind in ("bpe", "unigram"):
            folder = os.path.join(cls.tmp, kind)
            log = run(TRAIN, *common, "--checkpoint_dir=" + folder, "--dataset=text",
                      "--text_path=" + cls.text_path, "--tokenizer=sentencepiece",
                      "--tokenizer_type=" + kind, "--vocab_size=400")
            cls.runs[kind] = folder
            cls.ids[kind] = shard_tokens(log)
        cls.hf = {}
        for name, folder in [("bytes", cls.bytes_run)] + sorted(cls.runs.items()):
            out = os.path.join(cls.tmp, "hf_" + name)
            run(EXPORT_HF, "--input=" + folder, "--output=" + out)
            cls.hf[name] = out

    def load(self, name):
        return Tokenizer.from_file(os.path.join(self.hf[name], "tokenizer.json"))

    def config(self, name):
        with open(os.path.join(self.hf[name], "tokenizer_config.json")) as f:
            return json.load(f)

    def assertRoundTrip(self, tok, text, want_ids):
        ids = tok.encode(text).ids
        self.assertEqual(len(ids), len(want_ids))
        first = next((i for i, (a, b) in enumerate(zip(ids, want_ids)) if a != b), None)
        self.assertIsNone(first, "ids differ from Mantissa's at %s: %s vs %s" % (
            first, ids[first:first + 8] if first is not None else "",
            want_ids[first:first + 8] if first is not None else ""))
        decoded = tok.decode(ids)
        self.assertEqual(decoded.encode("utf-8"), text.encode("utf-8"))

    def test_byte_level_ids_are_the_runs_and_the_tokenize_tools(self):
        tok = self.load("bytes")
        self.assertEqual(tok.get_vocab_size(), 256)
        self.assertRoundTrip(tok, self.corpus, list(self.corpus_bytes))
        prefix = os.path.join(self.tmp, "tokenized")
        run(TOKENIZE, "--input=" + self.text_path, "--output_prefix=" + prefix,
            "--val_fraction=0")
        self.assertEqual(tok.encode(self.corpus).ids, read_shard(prefix + "_train_000.bin"))
        for text in (ODD_TEXT, SPELLED_PIECES, "<|endoftext|>", ""):
            self.assertRoundTrip(tok, text, list(text.encode("utf-8")))

    def test_byte_level_vocab_and_merges_are_gpt2s_files(self):
        # What GPT2Tokenizer reads: GPT-2's byte-level BPE over vocab.json and
        # merges.txt, with GPT-2's own regex split.
        bpe = models.BPE.from_file(os.path.join(self.hf["bytes"], "vocab.json"),
                                   os.path.join(self.hf["bytes"], "merges.txt"))
        tok = Tokenizer(bpe)
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        for text in (self.corpus, ODD_TEXT):
            self.assertEqual(tok.encode(text).ids, list(text.encode("utf-8")))
        config = self.config("bytes")
        for special in ("bos_token", "eos_token", "unk_token", "pad_token"):
            self.assertIsNone(config[special], special)
        self.assertEqual(config["model_max_length"], 64)
        self.assertEqual(self.load("bytes").get_added_tokens_decoder(), {})

    def test_sentencepiece_bpe_gives_mantissas_ids(self):
        tok = self.load("bpe")
        self.assertEqual(tok.get_vocab_size(), 400)
        # The whole corpus, as train tokenized it.
        self.assertRoundTrip(tok, self.corpus, self.ids["bpe"])
        sp = SentencePiece(os.path.join(self.runs["bpe"], "tokenizer.model"), self.tmp)
        for text in (ODD_TEXT, SPELLED_PIECES, ODD_TEXT + SPELLED_PIECES, " ", "\n", "x", ""):
            self.assertRoundTrip(tok, text, sp.encode(text))

    def test_sentencepiece_unigram_gives_mantissas_ids(self):
        tok = self.load("unigram")
        self.assertEqual(tok.get_vocab_size(), 400)
        sp = SentencePiece(os.path.join(self.runs["unigram"], "tokenizer.model"), self.tmp)
        fortunes = [f for f in self.corpus.split("\n\n") if f]
        self.assertGreater(len(fortunes), 500)
        for fortune in fortunes:
            self.assertRoundTrip(tok, fortune, sp.encode(fortune))
        for text in (ODD_TEXT, " ", "\n", "x", ""):
            self.assertRoundTrip(tok, text, sp.encode(text))

    def test_sentencepiece_files(self):
        for kind, folder in self.runs.items():
            with open(os.path.join(folder, "tokenizer.model"), "rb") as a, \
                    open(os.path.join(self.hf[kind], "tokenizer.model"), "rb") as b:
                self.assertEqual(a.read(), b.read(), kind)
            config = self.config(kind)
            self.assertEqual((config["bos_token"], config["eos_token"], config["unk_token"]),
                             ("<s>", "</s>", "<unk>"))
            self.assertTrue(config["split_special_tokens"])
            self.assertFalse(config["clean_up_tokenization_spaces"])
            self.assertFalse(os.path.exists(os.path.join(self.hf[kind], "vocab.json")))
            tok = self.load(kind)
            self.assertEqual([tok.id_to_token(i) for i in range(3)], ["<unk>", "<s>", "</s>"])

    def test_a_later_export_replaces_the_other_tokenizers_files(self):
        out = os.path.join(self.tmp, "reused")
        run(EXPORT_HF, "--input=" + self.bytes_run, "--output=" + out)
        self.assertTrue(os.path.exists(os.path.join(out, "vocab.json")))
        log = run(EXPORT_HF, "--input=" + self.runs["bpe"], "--output=" + out)
        self.assertIn("removed an earlier export's vocab.json, merges.txt", log)
        self.assertEqual(sorted(os.listdir(out)),
                         ["config.json", "model.safetensors", "tokenizer.json",
                          "tokenizer.model", "tokenizer_config.json"])


if __name__ == "__main__":
    print("tokenizers", tokenizers.__version__, "from", os.path.dirname(tokenizers.__file__))
    unittest.main(argv=sys.argv[:1])
