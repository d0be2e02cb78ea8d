"""shardpack.DataLoader and the training frameworks (docs/python.md, "Training frameworks").

DataLoaderTest: the torch DataLoader protocol (iter / len / epochs / set_epoch)
and torchdata's StatefulDataLoader protocol (state_dict mid-epoch, a new
loader, load_state_dict, exactly the rest), compared with the Reader's own
epochs by record index. LightningTest: Trainer.fit with a checkpoint at step
k, resumed from it, trains on exactly the batches an uninterrupted run trained
on after step k; so does a fit stopped by a real SIGINT inside step k with
OnExceptionCheckpoint and shardpack.lightning.ExactResume. AccelerateTest: accelerator.prepare hands the loader back,
and a few steps train. The examples lightning_cifar.py and accelerate_cifar.py
run, and resumed they log the losses an uninterrupted run logs.

Needs torch (exit 77 without); the Lightning and Accelerate tests skip, with
the reason, where those are not importable: scripts/python-env makes the
venv that has them (build/venv-torch, tests run with build-py311/python).
"""
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402

fixtures.require("torch")
import shardpack  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def optional(name):
    """(module, None) or (None, why it is missing)."""
    try:
        return importlib.import_module(name), None
    except ImportError as e:
        return None, (f"{name} is not importable by {sys.executable} ({e}); "
                      f"scripts/python-env makes a venv with it")


L, NO_LIGHTNING = optional("lightning")
accelerate, NO_ACCELERATE = optional("accelerate")
torchdata_stateful, NO_TORCHDATA = optional("torchdata.stateful_dataloader")

BATCH = 50
SEED = 7


def indices_of(batches):
    """The record indices of each batch: [[int]]."""
    return [b[2].tolist() for b in batches]


class LoaderDataset(fixtures.DatasetTest):
    RECORDS = 600  # 12 batches of 50 an epoch

    def loader(self, **keywords):
        keywords = {"batch_size": BATCH, "seed": SEED, "indices": True, "threads": 1,
                    **keywords}
        return shardpack.DataLoader(self.ds, **keywords)

    def reader_epoch(self, epoch, **keywords):
        """What shardpack.Reader gives in `epoch`: the reference order."""
        keywords = {"batch_size": BATCH, "seed": SEED, "indices": True, "threads": 1,
                    "output": "torch", **keywords}
        reader = shardpack.Reader(self.ds, **keywords)
        reader.set_epoch(epoch)
        return indices_of(reader)


class DataLoaderTest(LoaderDataset):

    def test_import_shardpack_imports_no_torch(self):
        code = ("import sys, shardpack; shardpack.DataLoader; dir(shardpack); "
                "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "[]")

    def test_each_iter_is_the_next_epoch(self):
        loader = self.loader()
        self.assertEqual(len(loader), 12)
        self.assertEqual(loader.batch_size, BATCH)
        for epoch in range(3):
            it = iter(loader)
            self.assertEqual(loader.epoch, epoch)
            self.assertEqual(len(it), 12)
            self.assertEqual(indices_of(it), self.reader_epoch(epoch), f"epoch {epoch}")

    def test_iter_again_before_a_batch_stays_in_the_epoch(self):
        # Lightning calls iter() twice before the first batch of a fit.
        loader = self.loader()
        iter(loader)
        iter(loader)
        self.assertEqual(indices_of(loader), self.reader_epoch(0))

    def test_iter_after_a_partial_epoch_starts_the_next(self):
        loader = self.loader()
        it = iter(loader)
        for _ in range(3):
            batch = next(it)
        del batch
        self.assertEqual(indices_of(loader), self.reader_epoch(1))

    def test_an_iterator_replaced_by_a_later_iter_raises(self):
        loader = self.loader()
        old = iter(loader)
        iter(loader)
        with self.assertRaisesRegex(RuntimeError, "replaced by a later iter"):
            next(old)

    def test_set_epoch_and_sampler_set_epoch_choose_the_next_epoch(self):
        loader = self.loader()
        loader.set_epoch(5)
        self.assertEqual(indices_of(loader), self.reader_epoch(5))
        loader.sampler.set_epoch(2)  # the DistributedSampler idiom
        self.assertEqual(indices_of(loader), self.reader_epoch(2))
        self.assertIsNone(loader.batch_sampler)

    def test_state_dict_then_a_new_loader_gives_exactly_the_rest(self):
        epoch0, epoch1 = self.reader_epoch(0), self.reader_epoch(1)
        # k == 12: after the epoch's last batch, before its end was reported:
        # the resumed loader goes on with epoch 1, not with an empty epoch.
        for k in (0, 1, 5, 11, 12):
            with self.subTest(k=k):
                # Holds up to 12 zero-copy batches at once: a ring that deep.
                first = self.loader(ring_slots=16)
                it = iter(first)
                seen = [next(it) for _ in range(k)]
                state = json.loads(json.dumps(first.state_dict()))  # plain data
                self.assertEqual(indices_of(seen), epoch0[:k])
                del seen
                second = self.loader()
                second.load_state_dict(state)
                expected = epoch0[k:] if k < 12 else epoch1
                self.assertEqual(len(second), 12)
                self.assertEqual(indices_of(second), expected)
                self.assertEqual(indices_of(second), epoch1 if k < 12 else self.reader_epoch(2))

    def test_state_dict_before_the_last_batch_gives_that_batch_again(self):
        epoch0 = self.reader_epoch(0)
        first = self.loader()
        self.assertEqual(first.state_dict(last_batch_done=False), first.state_dict())
        it = iter(first)
        for k in range(1, 13):
            next(it)
            state = first.state_dict(last_batch_done=False)
            self.assertEqual(state["reader"]["batch"], k - 1)
        second = self.loader()
        second.load_state_dict(state)  # before the epoch's last batch
        self.assertEqual(indices_of(second), epoch0[11:])
        third = self.loader()
        third.load_state_dict(first.state_dict(last_batch_done=False))
        it = iter(third)
        self.assertEqual(next(it)[2].tolist(), epoch0[11])
        # Positioning (load_state_dict, set_epoch) forgets the batch before.
        third.set_epoch(4)
        self.assertEqual(third.state_dict(last_batch_done=False), third.state_dict())

    def test_state_dict_after_the_end_of_an_epoch_resumes_at_the_next(self):
        first = self.loader()
        for _ in first:
            pass
        second = self.loader()
        second.load_state_dict(first.state_dict())
        self.assertEqual(indices_of(second), self.reader_epoch(1))

    def test_state_dict_before_any_iter_resumes_at_the_start(self):
        first = self.loader()
        first.set_epoch(3)
        second = self.loader()
        second.load_state_dict(first.state_dict())
        self.assertEqual(indices_of(second), self.reader_epoch(3))

    def test_load_state_dict_of_nothing_changes_nothing(self):
        loader = self.loader()
        loader.load_state_dict({})  # torchdata's "no state"
        self.assertEqual(indices_of(loader), self.reader_epoch(0))
        with self.assertRaisesRegex(ValueError, "a dict with 'reader'"):
            loader.load_state_dict({"epoch": 1})
        with self.assertRaisesRegex(ValueError, "epoch"):
            loader.load_state_dict({"reader": {"seed": SEED}})

    def test_elastic_resume_on_another_world_size(self):
        # 2 ranks take 2 batches each; 3 ranks load rank 0's state and finish.
        old = [self.loader(rank=r, world_size=2, remainder="partial") for r in range(2)]
        delivered = []
        for loader in old:
            it = iter(loader)
            delivered += sum((next(it)[2].tolist() for _ in range(2)), [])
        state = old[0].state_dict()
        del old, it
        new = [self.loader(rank=r, world_size=3, remainder="partial") for r in range(3)]
        rest = []
        for loader in new:
            loader.load_state_dict(state)
            batches = len(loader)  # the 2 batches the old job took, then this job's rest
            rest_batches = indices_of(loader)
            self.assertEqual(batches, 2 + len(rest_batches))
            rest += sum(rest_batches, [])
        self.assertEqual(len(set(delivered) | set(rest)), len(delivered) + len(rest))  # once
        self.assertGreater(len(delivered) + len(rest), self.RECORDS - 3)  # all but < world
        for rank, loader in enumerate(new):  # then ordinary epochs on 3 ranks
            self.assertEqual(len(loader), 4)
            self.assertEqual(indices_of(loader),
                             self.reader_epoch(1, rank=rank, world_size=3, remainder="partial"))

    def test_labels_are_on_the_images_device(self):
        images, labels, _ = next(iter(self.loader()))
        self.assertEqual(labels.device, images.device)
        model = torch.nn.Linear(32 * 32 * 3, 10)
        F.cross_entropy(model(images.flatten(1).float()), labels).backward()

    @unittest.skipUnless(torch.cuda.is_available(), "no CUDA device")
    def test_labels_follow_cuda_images(self):
        host = iter(self.loader())
        cuda = iter(self.loader(device="cuda"))
        for _ in range(4):  # more than one ring turn of labels
            (_, host_labels, _), (images, labels, indices) = next(host), next(cuda)
            self.assertTrue(images.is_cuda and labels.is_cuda)
            self.assertEqual(labels.device, images.device)
            self.assertFalse(indices.is_cuda)
            self.assertTrue(torch.equal(labels.cpu(), host_labels))

    def test_output_other_than_torch_is_refused(self):
        with self.assertRaisesRegex(ValueError, "output='numpy' is not allowed"):
            self.loader(output="numpy")

    @unittest.skipIf(torchdata_stateful is None, NO_TORCHDATA)
    def test_is_stateful_for_torchdata(self):
        self.assertIsInstance(self.loader(), torchdata_stateful.Stateful)


@unittest.skipIf(L is None, NO_LIGHTNING)
class LightningTest(LoaderDataset):
    RECORDS = 400  # 8 batches of 50 an epoch

    def fit(self, max_steps, ckpt_path=None, checkpoint_dir=None, callbacks=(),
            **trainer_options):
        """Trainer.fit on a shardpack.DataLoader; the record indices of each trained batch."""
        from lightning.pytorch.callbacks import ModelCheckpoint
        test = self

        class Data(L.LightningDataModule):
            def train_dataloader(self):
                return test.loader()

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(32 * 32 * 3, 10)
                self.trained = []

            def training_step(self, batch, batch_idx):
                images, labels, indices = batch
                self.trained.append(indices.tolist())
                return F.cross_entropy(self.linear(images.flatten(1).float() / 255), labels)

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.01)

        callbacks = list(callbacks)
        if checkpoint_dir:
            callbacks.append(ModelCheckpoint(dirpath=checkpoint_dir, filename="{step}",
                                             every_n_train_steps=1, save_top_k=-1))
        trainer = L.Trainer(max_steps=max_steps, accelerator="cpu", devices=1, logger=False,
                            enable_progress_bar=False, enable_model_summary=False,
                            enable_checkpointing=bool(checkpoint_dir), callbacks=callbacks,
                            **trainer_options)
        model = Model()
        trainer.fit(model, datamodule=Data(), ckpt_path=ckpt_path)
        return model.trained

    def check_resume(self, steps, resume_at, **trainer_options):
        with tempfile.TemporaryDirectory(prefix="shardpack-lightning-") as d:
            full = self.fit(steps, checkpoint_dir=d, **trainer_options)
            self.assertEqual(len(full), steps)
            for k in resume_at:
                with self.subTest(k=k):
                    ckpt = os.path.join(d, f"step={k}.ckpt")
                    # The loader's position in the checkpoint: after the k-th
                    # trained batch, not one ahead.
                    state = torch.load(ckpt, weights_only=False)
                    loaders = state["loops"]["fit_loop"]["state_dict"]["combined_loader"]
                    self.assertEqual(len(loaders), 1)
                    reader = loaders[0]["reader"]
                    self.assertEqual(full[k - 1],
                                     self.reader_epoch(reader["epoch"])[reader["batch"] - 1])
                    resumed = self.fit(steps, ckpt_path=ckpt, **trainer_options)
                    self.assertEqual(resumed, full[k:])
        return full

    def test_uninterrupted_fit_trains_on_the_reader_epochs(self):
        full = self.fit(20)
        self.assertEqual(full, (self.reader_epoch(0) + self.reader_epoch(1) +
                                self.reader_epoch(2))[:20])

    def test_resumed_fit_trains_on_exactly_the_batches_after_the_checkpoint(self):
        # mid-epoch, after an epoch's last batch, one into the next epoch
        self.check_resume(20, resume_at=(3, 8, 9, 16))

    def test_resume_with_limit_train_batches(self):
        # Lightning ends each epoch after 3 of the 8 batches; resuming at
        # such an end must start the next epoch (set_epoch from Lightning).
        full = self.check_resume(8, resume_at=(2, 3, 4), limit_train_batches=3)
        self.assertEqual(full[:6], self.reader_epoch(0)[:3] + self.reader_epoch(1)[:3])

    def interrupted_fit(self, d, steps, stop_at, exact):
        """A fit of `steps` in another process, stopped by SIGINT inside the training step
        at global step `stop_at`: (the batches whose step finished, the checkpoint that
        OnExceptionCheckpoint wrote)."""
        child = subprocess.Popen(
            [sys.executable, "-c", INTERRUPTED_FIT, self.ds, d, str(steps), str(stop_at),
             "1" if exact else "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        in_step = os.path.join(d, "in-step")
        deadline = time.monotonic() + 120
        while not os.path.exists(in_step) and child.poll() is None:
            self.assertLess(time.monotonic(), deadline, "the fit never reached the step")
            time.sleep(0.05)
        if child.poll() is not None:
            self.fail(f"the fit ended before step {stop_at}:\n{child.stdout.read().decode()}")
        os.kill(child.pid, signal.SIGINT)  # Ctrl-C, while training_step blocks
        output = child.communicate(timeout=120)[0].decode()
        self.assertEqual(child.returncode, 1, output)  # Lightning's exit after Ctrl-C
        self.assertIn("Detected KeyboardInterrupt", output)
        trained = []
        if os.path.exists(os.path.join(d, "trained.jsonl")):  # none before step 0
            with open(os.path.join(d, "trained.jsonl")) as f:
                trained = [json.loads(line) for line in f]
        return trained, os.path.join(d, "interrupted.ckpt")

    def test_sigint_inside_a_step_resumes_with_that_step(self):
        # A step mid-epoch, the first step of the second epoch, the first step of all.
        from shardpack.lightning import ExactResume
        steps = 12
        full = self.fit(steps)
        for stop_at in (5, 8, 0):
            with self.subTest(stop_at=stop_at), \
                    tempfile.TemporaryDirectory(prefix="shardpack-sigint-") as d:
                trained, ckpt = self.interrupted_fit(d, steps, stop_at, exact=True)
                self.assertEqual(trained, full[:stop_at])
                state = torch.load(ckpt, weights_only=False)
                self.assertEqual(state["global_step"], stop_at)
                reader = state["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]["reader"]
                self.assertEqual((reader["epoch"], reader["batch"]), divmod(stop_at, 8))
                resumed = self.fit(steps, ckpt_path=ckpt, callbacks=[ExactResume()])
                self.assertEqual(trained + resumed, full)
                self.assertEqual(len(resumed), steps - stop_at)

    def test_sigint_without_exact_resume_skips_the_batch_in_flight(self):
        # What docs/python.md says of a checkpoint written inside a step without
        # ExactResume: the loader's position is after the batch of that step.
        steps = 12
        full = self.fit(steps + 1)
        with tempfile.TemporaryDirectory(prefix="shardpack-sigint-") as d:
            trained, ckpt = self.interrupted_fit(d, steps, 5, exact=False)
            resumed = self.fit(steps, ckpt_path=ckpt)
            self.assertEqual(trained, full[:5])
            self.assertEqual(resumed, full[6:steps + 1])  # full[5] is never trained

    def test_exact_resume_leaves_checkpoints_between_steps_alone(self):
        from shardpack.lightning import ExactResume
        with tempfile.TemporaryDirectory(prefix="shardpack-lightning-") as d:
            full = self.fit(12, checkpoint_dir=d, callbacks=[ExactResume()])
            for k in (3, 8, 9):
                with self.subTest(k=k):
                    resumed = self.fit(12, ckpt_path=os.path.join(d, f"step={k}.ckpt"),
                                       callbacks=[ExactResume()])
                    self.assertEqual(resumed, full[k:])

    def test_is_stateful_for_lightning(self):
        from lightning.fabric.utilities.types import _Stateful
        self.assertIsInstance(self.loader(), _Stateful)


@unittest.skipIf(accelerate is None, NO_ACCELERATE)
class AccelerateTest(LoaderDataset):

    def test_prepare_hands_the_loader_back_and_it_trains(self):
        accelerator = accelerate.Accelerator(cpu=True)
        loader = self.loader()
        model = torch.nn.Linear(32 * 32 * 3, 10)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        model, opt, prepared = accelerator.prepare(model, opt, loader)
        self.assertIs(prepared, loader)  # no torch DataLoader, so no re-sharding
        trained = []
        for step, (images, labels, indices) in enumerate(prepared):
            loss = F.cross_entropy(model(images.flatten(1).float() / 255), labels)
            accelerator.backward(loss)
            opt.step()
            opt.zero_grad()
            trained.append(indices.tolist())
            if step == 3:
                break
        self.assertEqual(trained, self.reader_epoch(0)[:4])

    def test_save_state_and_load_state_resume_the_loader(self):
        with tempfile.TemporaryDirectory(prefix="shardpack-accelerate-") as d:
            accelerator = accelerate.Accelerator(cpu=True)
            loader = accelerator.prepare(self.loader())
            accelerator.register_for_checkpointing(loader)
            it = iter(loader)
            for _ in range(5):
                next(it)
            accelerator.save_state(d)
            fresh = accelerate.Accelerator(cpu=True)
            again = fresh.prepare(self.loader())
            fresh.register_for_checkpointing(again)
            fresh.load_state(d)
            self.assertEqual(indices_of(again), self.reader_epoch(0)[5:])


# The child of LightningTest.interrupted_fit: argv is DATASET DIR STEPS STOP_AT EXACT.
# Its training_step at global step STOP_AT creates DIR/in-step and blocks until
# SIGINT; each step that finishes appends its record indices to DIR/trained.jsonl.
INTERRUPTED_FIT = """
import json, os, sys, time
import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import OnExceptionCheckpoint
import shardpack
from shardpack.lightning import ExactResume

ds, out, steps, stop_at, exact = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \\
    sys.argv[5] == "1"


class Data(L.LightningDataModule):
    def train_dataloader(self):
        return shardpack.DataLoader(ds, batch_size=%d, seed=%d, indices=True, threads=1)


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(32 * 32 * 3, 10)

    def training_step(self, batch, batch_idx):
        images, labels, indices = batch
        if self.global_step == stop_at:
            open(os.path.join(out, "in-step"), "w").close()
            while True:
                time.sleep(0.01)
        with open(os.path.join(out, "trained.jsonl"), "a") as f:
            f.write(json.dumps(indices.tolist()) + "\\n")
        return F.cross_entropy(self.linear(images.flatten(1).float() / 255), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


callbacks = [OnExceptionCheckpoint(out, filename="interrupted")] + ([ExactResume()] if exact else [])
trainer = L.Trainer(max_steps=steps, accelerator="cpu", devices=1, logger=False,
                    enable_progress_bar=False, enable_model_summary=False,
                    default_root_dir=out, callbacks=callbacks)
trainer.fit(Model(), datamodule=Data())
""" % (BATCH, SEED)

EXAMPLES = os.environ.get("SHARDPACK_EXAMPLES", os.path.join(os.path.dirname(
    os.path.abspath(__file__)), "..", "..", "examples"))


def run_example(name, *args):
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args],
                       capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
    return p


def losses(output):
    """{step: loss text} of an example's log lines."""
    return dict(re.findall(r"^step (\d+) .*loss (\d+\.\d+)$", output, re.MULTILINE))


class ExamplesTest(fixtures.DatasetTest):
    RECORDS = 640  # 20 batches of 32

    common = ("--batch-size", "32", "--threads", "1", "--log-every", "5")

    @unittest.skipIf(L is None, NO_LIGHTNING)
    def test_lightning_example_resumes_with_the_losses_of_an_uninterrupted_run(self):
        with tempfile.TemporaryDirectory(prefix="shardpack-lightning-") as d:
            full = run_example("lightning_cifar.py", self.ds, "--steps", "30",
                               "--checkpoint-every", "15", "--out", d, *self.common)
            self.assertEqual(full.returncode, 0)
            self.assertIn("done: 30 steps; reader at epoch 1 batch 10", full.stdout)
            resumed = run_example("lightning_cifar.py", self.ds, "--steps", "30",
                                  "--resume", os.path.join(d, "step=15.ckpt"), "--out", d,
                                  *self.common)
            self.assertEqual(resumed.returncode, 0)
            self.assertIn("reader at epoch 0 batch 15", resumed.stdout)
            after = {s: v for s, v in losses(full.stdout).items() if int(s) >= 15}
            self.assertEqual(sorted(after), ["15", "20", "25"])
            self.assertEqual(losses(resumed.stdout), after)

    @unittest.skipIf(accelerate is None, NO_ACCELERATE)
    def test_accelerate_example_resumes_with_the_losses_of_an_uninterrupted_run(self):
        with tempfile.TemporaryDirectory(prefix="shardpack-accelerate-") as d:
            full = run_example("accelerate_cifar.py", self.ds, "--steps", "30", "--cpu",
                               "--save-every", "15", "--out", d, *self.common)
            self.assertEqual(full.returncode, 0)
            self.assertIn("done: 30 steps; reader at epoch 1 batch 10", full.stdout)
            resumed = run_example("accelerate_cifar.py", self.ds, "--steps", "30", "--cpu",
                                  "--save-every", "100", "--resume",
                                  os.path.join(d, "step-15"), *self.common)
            self.assertEqual(resumed.returncode, 0)
            self.assertIn("epoch 0 batch 15, step 15", resumed.stdout)
            after = {s: v for s, v in losses(full.stdout).items() if int(s) > 15}
            self.assertEqual(sorted(after), ["20", "25", "30"])
            self.assertEqual(losses(resumed.stdout), after)


if __name__ == "__main__":
    unittest.main()
