"""The verdict rules on made-up runs: each claim holds on numbers that meet
its rule and fails on numbers that do not, and says so with the ratio."""

import unittest

from tools.report import claims
from tools.report import runs


def make_run(precision, memory, samples_per_second_time=1.0, eval_loss=2.0, device="cpu"):
    """A run of 10 steps of 100 samples taking `samples_per_second_time`
    seconds of training, with peak bytes `memory` by category."""
    records = [
        {"type": "run", "start_step": 0, "samples_per_step": 100,
         "targets_per_example": 1, "model": "mlp", "device": device},
        {"type": "train", "step": 10, "loss": eval_loss, "skipped": False},
        {"type": "eval", "step": 10, "eval_loss": eval_loss, "eval_accuracy": 0.9},
        {"type": "summary", "steps": 10, "skipped_steps": 0,
         "phase_seconds": {"forward": samples_per_second_time / 2,
                           "backward": samples_per_second_time / 2, "eval": 100.0},
         "memory_bytes": {c: {"peak": v} for c, v in memory.items()}},
    ]
    return runs.Run(precision, records)


FP32 = {"weights": 400, "master_weights": 0, "gradients": 400, "activations": 1000}
MIXED = {"weights": 200, "master_weights": 400, "gradients": 600, "activations": 500}


class ClaimsTest(unittest.TestCase):

    def test_memory_claims_hold_on_the_guides_numbers(self):
        r = {"fp32": make_run("fp32", FP32), "bf16": make_run("bf16", MIXED),
             "fp16": make_run("fp16", MIXED)}
        for verdict in (claims.activations_halve(r), claims.model_at_one_and_a_half(r),
                        claims.gradients_no_saving(r)):
            self.assertEqual(verdict.status, claims.HOLDS, verdict)
        self.assertIn("bf16 0.500x fp32", claims.activations_halve(r).measured)
        self.assertIn("fp16 1.500x fp32's weights",
                      claims.model_at_one_and_a_half(r).measured)

    def test_memory_claims_fail_when_the_numbers_do_not_meet_them(self):
        wrong = {"weights": 200, "master_weights": 0, "gradients": 200,
                 "activations": 1000}  # no master copy, fp32 activations
        r = {"fp32": make_run("fp32", FP32), "bf16": make_run("bf16", wrong)}
        self.assertEqual(claims.activations_halve(r).status, claims.FAILS)
        self.assertEqual(claims.model_at_one_and_a_half(r).status, claims.FAILS)
        self.assertEqual(claims.gradients_no_saving(r).status, claims.FAILS)
        self.assertIn("bf16 1.000x fp32", claims.activations_halve(r).measured)

    def test_speed_is_judged_on_training_time_only(self):
        # bf16 at half the training time of fp32 and tf32: 2x. The 100 s of
        # evaluation in every run must not count.
        r = {"fp32": make_run("fp32", FP32, 1.0), "tf32": make_run("tf32", FP32, 1.0),
             "bf16": make_run("bf16", MIXED, 0.5)}
        self.assertEqual(r["bf16"].throughput(), 2000.0)
        v = claims.sixteen_bit_faster(r)
        self.assertEqual(v.status, claims.HOLDS)
        self.assertEqual(v.measured, "bf16 2.00x fp32, bf16 2.00x tf32")
        # Slower than fp32 (a CPU emulating bf16): said, with the ratio.
        r["bf16"] = make_run("bf16", MIXED, 2.0)
        v = claims.sixteen_bit_faster(r)
        self.assertEqual(v.status, claims.FAILS)
        self.assertIn("bf16 0.50x fp32", v.measured)

    def test_repeated_timings_judge_only_ranges_that_do_not_overlap(self):
        r = {"fp32": make_run("fp32", FP32), "bf16": make_run("bf16", MIXED)}
        # Clearly faster: every bf16 timing above every fp32 one.
        v = claims.sixteen_bit_faster(r, {"fp32": [100, 110, 105], "bf16": [200, 190, 210]})
        self.assertEqual(v.status, claims.HOLDS)
        self.assertIn("bf16 1.90x fp32 (ranges 190-210 vs 100-110)", v.measured)
        self.assertIn("medians of 3 interleaved timing runs", v.rule)
        # Clearly slower: fails.
        v = claims.sixteen_bit_faster(r, {"fp32": [100, 110, 105], "bf16": [50, 60, 55]})
        self.assertEqual(v.status, claims.FAILS)
        # A busy machine: the ranges overlap, so no verdict either way (the
        # issue saw one timing each say bf16 5.08x and fp16 0.33x fp32).
        v = claims.sixteen_bit_faster(r, {"fp32": [100, 20, 105], "bf16": [508, 90, 101]})
        self.assertEqual(v.status, claims.NOISY)
        self.assertIn("ranges 90-508 vs 20-105", v.measured)

    def test_each_16bit_format_gets_its_own_speed_verdict(self):
        # A GPU where bf16 is clearly faster and fp16 is not: one verdict for
        # both said "does not hold" of bf16's win.
        r = {p: make_run(p, MIXED) for p in ("fp32", "tf32", "bf16", "fp16")}
        timings = {"fp32": [100, 104, 102], "tf32": [150, 155, 152],
                   "bf16": [300, 310, 305], "fp16": [90, 95, 93]}
        verdicts = {v.claim: v for v in claims.judge_all(r, 0.02, timings)}
        bf16 = verdicts["bf16 is faster than tf32 and fp32 on this device"]
        fp16 = verdicts["fp16 is faster than tf32 and fp32 on this device"]
        self.assertEqual(bf16.status, claims.HOLDS)
        self.assertEqual(fp16.status, claims.FAILS)
        self.assertNotIn("fp16", bf16.measured)
        self.assertNotIn("bf16", fp16.measured)
        self.assertIn("fp16 0.91x fp32 (ranges 90-95 vs 100-104)", fp16.measured)
        self.assertIn("the bf16 run", bf16.rule)
        # fp16 within the noise: its verdict alone says so.
        timings["fp16"] = [80, 160, 120]
        verdicts = {v.claim: v for v in claims.judge_all(r, 0.02, timings)}
        self.assertEqual(verdicts["bf16 is faster than tf32 and fp32 on this device"].status,
                         claims.HOLDS)
        self.assertEqual(verdicts["fp16 is faster than tf32 and fp32 on this device"].status,
                         claims.NOISY)
        self.assertNotIn("16-bit is faster than tf32 and fp32 on this device", verdicts)

    def test_tf32_loss_within_the_stated_tolerance(self):
        r = {"fp32": make_run("fp32", FP32, eval_loss=2.0),
             "tf32": make_run("tf32", FP32, eval_loss=2.03)}
        self.assertEqual(claims.tf32_matches_fp32(r, 0.02).status, claims.HOLDS)
        self.assertIn("1.50% apart", claims.tf32_matches_fp32(r, 0.02).measured)
        self.assertEqual(claims.tf32_matches_fp32(r, 0.01).status, claims.FAILS)
        self.assertIn("1.0%", claims.tf32_matches_fp32(r, 0.01).rule)

    def test_fp8_is_judged_as_bf16_storage_with_its_loss_against_bf16s(self):
        # fp8 keeps bf16 weights and gradients beside fp32 masters (its
        # scales are optimizer state): those memory claims cover it; its
        # activations add FP8 GEMM inputs, so the halving claim is bf16's
        # and fp16's.
        fp8 = dict(MIXED, optimizer_state=999)
        r = {"fp32": make_run("fp32", FP32), "bf16": make_run("bf16", MIXED, eval_loss=2.0),
             "fp8": make_run("fp8", fp8, eval_loss=2.03)}
        self.assertNotIn("fp8", claims.activations_halve(r).measured)
        self.assertIn("bf16 0.500x fp32", claims.activations_halve(r).measured)
        self.assertIn("fp8 1.500x fp32's weights", claims.model_at_one_and_a_half(r).measured)
        self.assertEqual(claims.gradients_no_saving(r).status, claims.HOLDS)
        v = claims.fp8_matches_bf16(r, 0.02)
        self.assertEqual(v.status, claims.HOLDS)
        self.assertEqual(v.claim, "fp8 reaches bf16's loss")
        self.assertIn("fp8 2.0300 vs bf16 2.0000: 1.50% apart", v.measured)
        self.assertEqual(claims.fp8_matches_bf16(r, 0.01).status, claims.FAILS)
        # fp8 is not a 16-bit speed claim's subject.
        self.assertNotIn("fp8", claims.sixteen_bit_faster(r).measured)

    def test_fp8_speed_on_the_cpu_is_said_to_be_an_emulation(self):
        r = {"bf16": make_run("bf16", MIXED, 1.0), "fp8": make_run("fp8", MIXED, 5.0)}
        v = claims.fp8_faster(r, {"bf16": [100, 110, 105], "fp8": [20, 22, 21]})
        self.assertEqual(v.status, claims.FAILS)
        self.assertIn("fp8 0.20x bf16 (ranges 20-22 vs 100-110)", v.measured)
        self.assertIn("exact emulation", v.measured)
        self.assertIn("not a measure of FP8 hardware", v.measured)
        # On a GPU the same numbers are FP8 hardware's: no such note.
        r = {"bf16": make_run("bf16", MIXED, 1.0, device="cuda"),
             "fp8": make_run("fp8", MIXED, 0.5, device="cuda")}
        v = claims.fp8_faster(r)
        self.assertEqual(v.status, claims.HOLDS)
        self.assertEqual(v.measured, "fp8 2.00x bf16")
        self.assertEqual(claims.fp8_faster({"bf16": r["bf16"]}).status, claims.NOT_MEASURED)

    def test_missing_runs_are_not_measured(self):
        r = {"fp32": make_run("fp32", FP32)}
        for v in claims.judge_all(r, 0.02):
            self.assertEqual(v.status, claims.NOT_MEASURED, v)


if __name__ == "__main__":
    unittest.main()
