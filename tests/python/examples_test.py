"""The examples run: train_loop (C++), train_cifar.py and ddp.py on generated data.

ddp.py --check is the test of the distributed contract from Python: two
processes (gloo, loopback) each read their rank's records, and rank 0 checks
that the shares are disjoint and together complete. ddp.py --elastic is the
test of elastic resume: 4 ranks (torchrun, gloo on loopback) read 4 steps
and save, 3 ranks resume and finish the epoch, and the records of both jobs
are checked to come exactly once. Skipped (exit 77)
without torch; train_loop runs regardless.

The examples of datasets of fields (FieldExamplesTest) each write their own
small dataset into a temporary folder and run with --check, which asserts
what the example shows (its docstring says what).
"""
import os
import re
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402

try:
    import torch  # noqa: F401
except ImportError:
    torch = None

EXAMPLES = os.environ["SHARDPACK_EXAMPLES"]


def run(*cmd, timeout=120):
    """Runs cmd in its own process group, all of which is killed on a timeout
    (ddp.py's ranks are grandchildren)."""
    with subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            sys.stdout.write(out)
            sys.stderr.write(err)
            raise
    sys.stdout.write(out)
    sys.stderr.write(err)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


class ExamplesTest(fixtures.DatasetTest):
    RECORDS = 2000

    def test_train_loop_cc_runs_every_epoch(self):
        p = run(os.environ["TRAIN_LOOP"], self.ds, "--epochs", "2", "--batch-size", "200",
                "--compute-ms", "1", "--threads", "1")
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"epoch 1: 10 steps, \d+ images/s, data wait [\d.]+ ms/step")
        self.assertIn("samples 4000,", p.stdout)

    @unittest.skipIf(torch is None, "torch is not importable (Debian: python3-torch)")
    def test_train_cifar_loss_falls(self):
        p = run(sys.executable, os.path.join(EXAMPLES, "train_cifar.py"), self.ds,
                "--steps", "40", "--batch-size", "32", "--threads", "1", "--log-every", "10")
        self.assertEqual(p.returncode, 0)
        self.assertIn("records of 10 classes", p.stdout)  # the class count from the reader
        losses = [float(x) for x in re.findall(r"loss (\d+\.\d+)", p.stdout)]
        self.assertEqual(len(losses), 4)
        self.assertLess(losses[-1], losses[0])
        self.assertRegex(p.stdout, r"data wait [\d.]+ ms/step \([\d.]+% of the step\)")

    @unittest.skipIf(torch is None, "torch is not importable (Debian: python3-torch)")
    def test_ddp_ranks_records_are_disjoint_and_complete(self):
        p = run(sys.executable, os.path.join(EXAMPLES, "ddp.py"), self.ds, "--world-size", "2",
                "--batch-size", "128", "--check")
        self.assertEqual(p.returncode, 0)
        self.assertIn("rank 0: epoch 0, 8 steps", p.stdout)
        self.assertIn("rank 1: epoch 0, 8 steps", p.stdout)
        self.assertIn("disjoint: True; together complete (2000 records): True", p.stdout)
        self.assertRegex(p.stdout, r"dataset fingerprint [0-9a-f]{16} on all 2 ranks")

    @unittest.skipIf(torch is None, "torch is not importable (Debian: python3-torch)")
    def test_ddp_elastic_resume_on_three_of_four_ranks_is_exactly_once(self):
        p = run(sys.executable, os.path.join(EXAMPLES, "ddp.py"), self.ds, "--elastic",
                "--batch-size", "50", "--steps", "4", "--world-size", "4",
                "--resume-world-size", "3")
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        self.assertRegex(p.stdout, r"dataset fingerprint [0-9a-f]{16} on all 4 ranks")
        self.assertIn("job 1: 4 ranks, 4 steps of 10, state of every rank equal: True", p.stdout)
        self.assertIn("job 2: 3 ranks, [8, 8, 8] steps; records: 800 before, 1200 after; "
                      "exactly once: True; all but 0 of 2000: True", p.stdout)


NEEDS_TORCH = "torch is not importable (Debian: python3-torch)"


@unittest.skipIf(torch is None, NEEDS_TORCH)
class FieldExamplesTest(unittest.TestCase):
    """The examples of datasets of fields, each on the data it writes (no class dataset)."""

    def setUp(self):
        self.tmp = fixtures.TempDir()
        self.addCleanup(self.tmp.cleanup)

    def example(self, name, *args):
        p = run(sys.executable, os.path.join(EXAMPLES, name), "--out", self.tmp.path,
                "--threads", "1", "--check", *args)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        return p.stdout

    def test_clip_train_captions_match_images_and_loss_falls(self):
        out = self.example("clip_train.py", "--records", "256", "--steps", "40")
        self.assertRegex(out, r"clip: 256 records, fields \{'image': 'jpeg', 'caption': 'string'\}")
        self.assertRegex(out, r"check passed: loss [\d.]+ -> [\d.]+; every caption named its "
                              r"image's color \(40 batches\)")

    def test_detection_boxes_follow_the_crop_and_flip(self):
        out = self.example("detection.py", "--records", "128", "--steps", "8")
        self.assertIn("3 classes", out)
        self.assertRegex(out, r"check passed: \d+ of \d+ boxes where their rectangles are, "
                              r"[1-9]\d* of them in flipped samples")

    def test_segmentation_masks_follow_their_photos(self):
        out = self.example("segmentation.py", "--records", "128", "--steps", "8")
        self.assertRegex(out, r"check passed: \d+ of \d+ class regions where the photo shows them "
                              r"\([1-9]\d* flipped samples\); masks hold only their class ids")


if __name__ == "__main__":
    unittest.main(verbosity=2)
