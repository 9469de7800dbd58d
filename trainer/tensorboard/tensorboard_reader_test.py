"""TensorBoard's own reader on the event files `train --tensorboard_dir` writes.

Runs the real train binary on a short fp16 MLP run, then reads its event file
with TensorBoard's Python package: every record must pass TensorBoard's CRC
checks, and every scalar must equal (as float32) what the same run wrote to
its JSON lines. Skips, saying why, when the tensorboard package is not
installed for this Python (it is on PyPI, not in Debian; this test never
downloads it). To run it: `python3 -m pip install tensorboard`, or pass an
environment that has it, e.g.
  tools/bazel test //trainer/tensorboard:tensorboard_reader_test \
      --test_env=PYTHONPATH=<venv>/lib/python3.11/site-packages
"""

import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.compat.tensorflow_stub import errors as tb_errors
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow as tb_records
    SKIP_REASON = None
except ImportError as e:  # pragma: no cover - depends on the machine
    SKIP_REASON = ("the tensorboard Python package is not installed for %s (%s); "
                   "`python3 -m pip install tensorboard` to run this test"
                   % (sys.executable, e))


def runfile(path):
    return os.path.join(os.environ["TEST_SRCDIR"], "mantissa", path)


def f32(x):
    """x rounded to float32, as TensorBoard's simple_value stores it."""
    return struct.unpack("f", struct.pack("f", x))[0]


def read_all_records(path):
    """Every record through TensorBoard's record reader, which checks both
    masked CRC-32Cs of each record; raises DataLossError on a mismatch."""
    reader = tb_records.PyRecordReader_New(path, 0, None)
    records = []
    while True:
        try:
            reader.GetNext()
        except tb_errors.OutOfRangeError:
            return records
        records.append(reader.record())


@unittest.skipIf(SKIP_REASON is not None, SKIP_REASON or "")
class TensorBoardReaderTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.logdir = os.path.join(cls.tmp, "tb")
        cls.jsonl = os.path.join(cls.tmp, "metrics.jsonl")
        cmd = [runfile("trainer/cli/train"), "--model=mlp", "--dataset=digits",
               "--device=cpu", "--precision=fp16", "--steps=12", "--eval_every=6",
               "--log_every=1", "--progress=none", "--cache_dir=" + cls.tmp + "/cache",
               "--tensorboard_dir=" + cls.logdir, "--metrics_jsonl=" + cls.jsonl]
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True)
        if run.returncode != 0:
            raise AssertionError("train failed: %s\n%s" % (run.stderr, run.stdout))
        with open(cls.jsonl) as f:
            cls.records = [json.loads(line) for line in f if line.strip()]
        cls.acc = event_accumulator.EventAccumulator(
            cls.logdir, size_guidance={event_accumulator.SCALARS: 0,
                                       event_accumulator.TENSORS: 0})
        cls.acc.Reload()

    def scalars(self, tag):
        return {e.step: e.value for e in self.acc.Scalars(tag)}

    def test_every_record_passes_tensorboards_crc_checks(self):
        files = glob.glob(os.path.join(self.logdir, "*tfevents*"))
        self.assertEqual(len(files), 1, files)
        records = read_all_records(files[0])
        # file_version + run/config + 12 steps x 6 tags (no tokens/s for the
        # MLP; grad_norm only on applied steps) + 2 evals x 2 + summary.
        self.assertGreater(len(records), 2 + 12 * 5 + 4)

    def test_a_corrupted_copy_is_refused(self):
        # The check above can fail: TensorBoard's reader does verify CRCs.
        src = glob.glob(os.path.join(self.logdir, "*tfevents*"))[0]
        bad = os.path.join(self.tmp, "bad.tfevents")
        shutil.copy(src, bad)
        with open(bad, "rb") as f:
            data = bytearray(f.read())
        data[len(data) // 2] ^= 0x10
        with open(bad, "wb") as f:
            f.write(bytes(data))
        with self.assertRaises(tb_errors.DataLossError):
            read_all_records(bad)

    def test_training_scalars_equal_the_jsonl_values(self):
        train = [r for r in self.records if r["type"] == "train"]
        self.assertEqual(len(train), 12)
        for tag, field in [("train/loss", "loss"), ("train/lr", "lr"),
                           ("train/loss_scale", "loss_scale"),
                           ("train/skipped_steps", "skipped_steps"),
                           ("train/samples_per_second", "samples_per_second")]:
            got = self.scalars(tag)
            self.assertEqual(sorted(got), [r["step"] for r in train], tag)
            for r in train:
                self.assertEqual(got[r["step"]], f32(r[field]), (tag, r["step"]))
        norms = self.scalars("train/grad_norm")
        applied = [r for r in train if not r["skipped"]]
        self.assertEqual(sorted(norms), [r["step"] for r in applied])
        for r in applied:
            self.assertEqual(norms[r["step"]], f32(r["grad_norm"]))
        # fp16: the dynamic loss scale is GradScaler's 65536 to start with.
        self.assertEqual(self.scalars("train/loss_scale")[1], 65536.0)

    def test_eval_and_summary_scalars(self):
        evals = [r for r in self.records if r["type"] == "eval"]
        self.assertEqual([r["step"] for r in evals], [6, 12])
        loss, acc = self.scalars("eval/loss"), self.scalars("eval/accuracy")
        for r in evals:
            self.assertEqual(loss[r["step"]], f32(r["eval_loss"]))
            self.assertEqual(acc[r["step"]], f32(r["eval_accuracy"]))
        summary = [r for r in self.records if r["type"] == "summary"][-1]
        for category, b in summary["memory_bytes"].items():
            peak = self.scalars("memory/%s_peak_mib" % category)
            self.assertEqual(peak[12], f32(b["peak"] / 1048576.0), category)
        self.assertGreater(self.scalars("memory/activations_peak_mib")[12], 0)
        self.assertEqual(self.scalars("summary/samples_per_second")[12],
                         f32(summary["samples_per_second"]))

    def test_run_config_text(self):
        events = self.acc.Tensors("run/config")
        self.assertEqual(len(events), 1)
        text = events[0].tensor_proto.string_val[0].decode()
        self.assertIn("precision **fp16**", text)
        self.assertIn("mnt_precision_fp16.so", text)
        self.assertIn('precision: "fp16"', text)


if __name__ == "__main__":
    if SKIP_REASON:
        print("SKIPPED: " + SKIP_REASON, file=sys.stderr)
    unittest.main()
