"""shardpack.Reader from Python: batches, zero-copy lifetimes, epochs, resume, errors.

Run by ctest with /usr/bin/python3 and PYTHONPATH at the build tree's module
(tests/python/CMakeLists.txt). Skipped (exit 77) without numpy; the torch
cases are skipped without torch.
"""
import gc
import json
import os
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402

fixtures.require("numpy")
import numpy as np  # noqa: E402

import shardpack  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

N = 1000      # records in the main dataset
BATCH = 64


class ReaderTest(fixtures.DatasetTest):
    RECORDS = N
    SHARD_RECORDS = 400

    def reader(self, **kw):
        args = dict(batch_size=BATCH, seed=7, threads=2, rank=0, world_size=1,
                    transform="cifar-train")
        args.update(kw)
        return shardpack.Reader(self.ds, **args)

    def test_zero_copy_arrays_view_the_slot_and_equal_copies(self):
        views, copies = self.reader(), self.reader(copy=True)
        self.assertEqual(len(views), N // BATCH)
        for (vi, vl), (ci, cl) in zip(views, copies):
            self.assertEqual(vi.shape, (BATCH, 32, 32, 3))
            self.assertEqual(vi.dtype, np.uint8)
            self.assertEqual(vl.shape, (BATCH,))
            self.assertEqual(vl.dtype, np.int64)
            self.assertIsInstance(vi.base, shardpack._BatchRef)
            self.assertIs(vi.base, vl.base)
            self.assertTrue(ci.flags.owndata and cl.flags.owndata)
            np.testing.assert_array_equal(vi, ci)
            np.testing.assert_array_equal(vl, cl)

    def test_every_array_has_c_strides_from_its_element_size(self):
        # pybind11 < 2.12 under numpy 2 made arrays with every stride 0 (each
        # element read as the first): python/arrays.h gives the strides.
        def c_strides(a):
            strides, step = [], a.itemsize
            for d in reversed(a.shape):
                strides.insert(0, step)
                step *= d
            return tuple(strides)
        for kw in ({}, {"copy": True}, {"dtype": "float32", "layout": "NCHW"}):
            images, labels, indices = next(iter(self.reader(indices=True, **kw)))
            for a in (images, labels, indices):
                self.assertEqual(a.strides, c_strides(a), (kw, a.dtype))
            self.assertEqual(len(set(indices.tolist())), BATCH, kw)

    def test_the_reader_tells_classes_schema_shape_and_engine_before_a_batch(self):
        r = self.reader(transform="cifar-eval:28", layout="NCHW")
        # The demo CIFAR-10 file has its batches.meta.txt beside it.
        self.assertEqual(r.classes[:3], ["airplane", "automobile", "bird"])
        self.assertEqual(len(r.classes), 10)
        self.assertEqual(r.schema["image"], {"encoding": "raw", "layout": "hwc", "height": 32,
                                             "width": 32, "channels": 3})
        self.assertEqual(r.schema["labels"], [{"name": "label", "classes": r.classes}])
        self.assertEqual(r.output_shape, (BATCH, 3, 28, 28))
        self.assertIn(r.engine, ("pread", "mmap", "direct", "uring"))
        self.assertEqual(self.reader(io="pread").engine, "pread")
        images, _ = next(iter(r))
        self.assertEqual(images.shape, r.output_shape)

    def test_an_epoch_delivers_every_record_once(self):
        r = self.reader(remainder="partial", indices=True)
        seen, labels = [], {}
        for _, lab, idx in r:
            seen.extend(idx.tolist())
            labels.update(zip(idx.tolist(), lab.tolist()))
        self.assertEqual(sorted(seen), list(range(N)))
        self.assertNotEqual(seen, sorted(seen))  # shuffled
        # make_demo_data labels record i with i % 10, and the pack shuffles,
        # so the labels say the records are whole: 100 of each class.
        self.assertEqual(np.bincount(list(labels.values())).tolist(), [100] * 10)

    def test_shuffle_bytes_is_the_dataset_whole_or_what_was_given(self):
        shards = sum(os.path.getsize(os.path.join(self.ds, f))
                     for f in os.listdir(self.ds) if f.endswith(".shard"))
        chosen = self.reader().shuffle_bytes  # a small dataset: its share whole
        self.assertGreaterEqual(chosen, shards // 2)
        self.assertLess(chosen, 256 << 20)
        self.assertEqual(self.reader(shuffle_bytes=5 << 20).shuffle_bytes, 5 << 20)
        self.assertEqual(self.reader(copy=True).state_dict()["shuffle_bytes"], chosen)

    def test_default_ring_is_deeper_for_small_batches(self):
        r = self.reader(batch_size=16)  # more batches an epoch than slots
        batch_bytes = int(np.prod(r.output_shape))  # uint8
        # As many as fit in 32 MiB, 4 to a slot a worker and 4 more (2 threads).
        self.assertEqual(r.ring_slots, min(2 + 4, max(4, (32 << 20) // batch_bytes)))
        self.assertGreater(r.ring_slots, 4)  # the fixture's batches are small
        held = [next(r) for _ in range(r.ring_slots)]  # ring_slots - 1 held across each call
        with self.assertRaisesRegex(shardpack.Error, "still holds the ring slot"):
            next(r)
        del held[0]
        next(r)

    def test_holding_the_batch_whose_slot_is_needed_raises_instead_of_hanging(self):
        r = self.reader(ring_slots=3)
        self.assertEqual(r.ring_slots, 3)
        first = next(r)
        second = next(r)
        third = next(r)
        with self.assertRaisesRegex(shardpack.Error, "still holds the ring slot.*copy=True"):
            next(r)
        del first
        images, _ = next(r)  # batch 3 goes into batch 0's slot
        del second, third
        self.assertEqual(images.shape[0], BATCH)

    def test_arrays_outlive_the_reader(self):
        r = self.reader(shuffle=False, transform="none")
        images, labels = next(r)
        expected = (images.copy(), labels.copy())
        del r
        gc.collect()
        np.testing.assert_array_equal(images, expected[0])
        np.testing.assert_array_equal(labels, expected[1])

    def test_next_epoch_follows_and_set_epoch_jumps(self):
        r = self.reader(copy=True)
        epoch0 = [lab for _, lab in r]
        epoch1 = [lab for _, lab in r]
        self.assertEqual(len(epoch0), len(r))
        state = r.state_dict()
        self.assertEqual((state["seed"], state["epoch"], state["batch"]), (7, 2, 0))
        self.assertFalse(all(np.array_equal(a, b) for a, b in zip(epoch0, epoch1)))
        r.set_epoch(1)
        again = [lab for _, lab in r]
        for a, b in zip(epoch1, again):
            np.testing.assert_array_equal(a, b)

    def test_load_state_dict_resumes_the_identical_stream(self):
        r = self.reader(copy=True)
        r.set_epoch(3)
        for _ in range(4):
            next(r)
        state = r.state_dict()
        self.assertEqual(state, {"seed": 7, "epoch": 3, "batch": 4, "fingerprint": r.fingerprint,
                                 "world_size": 1, "batch_size": r.batch_size,
                                 "remainder": "drop", "shuffle": True,
                                 "shuffle_bytes": r.shuffle_bytes, "earlier": []})
        rest = list(r)
        resumed = self.reader(copy=True)
        resumed.load_state_dict(state)
        rest2 = list(resumed)
        self.assertEqual(len(rest), len(r) - 4)
        self.assertEqual(len(rest), len(rest2))
        for (a, la), (b, lb) in zip(rest, rest2):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(la, lb)

    def test_load_state_dict_refuses_while_zero_copy_arrays_live(self):
        r = self.reader()
        start = r.state_dict()
        images, labels = next(r)
        with self.assertRaisesRegex(shardpack.Error, "destroy every Batch"):
            r.load_state_dict(start)
        del images, labels
        r.load_state_dict(start)
        del start["batch"]
        with self.assertRaisesRegex(ValueError, "no 'batch'"):
            r.load_state_dict(start)

    def test_load_state_dict_with_bad_values_says_which_and_why(self):
        r = self.reader()
        good = r.state_dict()
        for bad in (-1, 2**63, 2**64 - 1, 2**64, "3", 1.5, None, True):
            with self.subTest(bad=bad):
                with self.assertRaisesRegex(
                        ValueError,
                        r"state_dict\['epoch'\] is .*: it must be an int from 0 to 2\*\*63-1"):
                    r.load_state_dict(dict(good, epoch=bad))
        # Every field of a saved state is checked: damaged or hostile values
        # are a ValueError naming the field, never a crash or a wrong stream.
        cases = [
            (dict(good, fingerprint="0123456789abcdef"), r"another dataset"),
            (dict(good, fingerprint="xyz"), r"\['fingerprint'\] is 'xyz': it must be 16 lowercase"),
            (dict(good, fingerprint=5), r"\['fingerprint'\] is 5"),
            (dict(good, seed=8), r"state of seed 8, reader of seed 7"),
            (dict(good, world_size=0), r"state.world_size 0 is out of range: 1 to 1048576"),
            (dict(good, world_size=2**31), r"\['world_size'\] is 2147483648: it must be an int from 0"),
            (dict(good, batch_size=0), r"state.batch_size 0"),
            (dict(good, remainder="most"), r"\['remainder'\] is 'most'"),
            (dict(good, shuffle=1), r"\['shuffle'\] is 1: it must be a bool"),
            (dict(good, batch=10**6), r"state.batch 1000000 is out of range: 0 to 15 "),
            (dict(good, earlier="x"), r"\['earlier'\] is 'x': it must be a list"),
            (dict(good, earlier=[{}] * 65), r"\['earlier'\] is .*at most 64"),
            (dict(good, earlier=[3]), r"\['earlier'\]\[0\] is 3: it must be a dict"),
            (dict(good, earlier=[{"world_size": 2}]), r"\['earlier'\]\[0\] has no 'batch_size'"),
            (dict(good, earlier=[dict(world_size=2, batch_size=10, remainder="drop", shuffle=True,
                                      shuffle_bytes=1, batches=10**9)]),
             r"segment 0 of the epoch: 1000000000 batches delivered"),
            ([1, 2], r"state_dict is \[1, 2\]: it must be a dict"),
        ]
        for state, says in cases:
            with self.subTest(says=says):
                with self.assertRaisesRegex(ValueError, says):
                    r.load_state_dict(state)
        self.assertEqual(r.state_dict(), good)

    def test_load_state_dict_refuses_a_key_it_does_not_know(self):
        # The keys are the C++ serializer's (ReaderState::ToJson, the same
        # text): one this version does not know is refused by name, not ignored.
        r = self.reader()
        good = r.state_dict()
        self.assertEqual(json.loads(json.dumps(good)), good)
        segment = dict(world_size=2, batch_size=10, remainder="drop", shuffle=True,
                       shuffle_bytes=1, batches=1)
        cases = [
            (dict(good, rank=1), r"^state_dict has an unknown key 'rank' \(a state_dict\(\) of "
             r"this version of shardpack has only seed, epoch, batch, fingerprint, world_size, "
             r"batch_size, remainder, shuffle, shuffle_bytes, earlier\)$"),
            ({**good, 3: 0}, r"^state_dict has an unknown key 3 "),
            (dict(good, earlier=[dict(segment, x=0)]),
             r"^state_dict\['earlier'\]\[0\] has an unknown key 'x' "),
        ]
        for state, says in cases:
            with self.subTest(says=says):
                with self.assertRaisesRegex(ValueError, says):
                    r.load_state_dict(state)
        r.load_state_dict(dict(good, earlier=[segment]))  # a well-formed earlier segment
        self.assertEqual(r.state_dict()["earlier"], [segment])

    def test_elastic_resume_on_another_world_size(self):
        # 2 ranks read 3 batches; 3 ranks finish the epoch from rank 1's state.
        seen, state = [], None
        for rank in range(2):
            r = self.reader(copy=True, indices=True, rank=rank, world_size=2, remainder="partial")
            for _ in range(3):
                seen.extend(next(r)[2].tolist())
            state = r.state_dict()
        counts = set()
        for rank in range(3):
            r = self.reader(copy=True, indices=True, rank=rank, world_size=3, remainder="partial")
            self.assertEqual(r.fingerprint, state["fingerprint"])
            r.load_state_dict(state)
            counts.add(r.batches_in_epoch)
            for _, _, idx in r:
                seen.extend(idx.tolist())
            self.assertEqual(r.state_dict()["epoch"], 1)
            self.assertEqual(r.batches_in_epoch, len(r))
        self.assertEqual(len(counts), 1)
        self.assertEqual(len(seen), len(set(seen)))
        owed = r.records - 2 * 3 * r.batch_size
        self.assertEqual(len(seen), r.records - owed % 3)

    def test_float_nchw_is_normalized(self):
        mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
        u8 = self.reader(transform="cifar-eval", copy=True)
        f32 = self.reader(transform="cifar-eval", copy=True, dtype="float32", layout="NCHW",
                          mean=mean, std=std)
        (a, _), (b, _) = next(u8), next(f32)
        self.assertEqual(b.dtype, np.float32)
        self.assertEqual(b.shape, (BATCH, 3, 32, 32))
        want = (a.transpose(0, 3, 1, 2) / 255.0 - np.array(mean)[:, None, None]) / \
            np.array(std)[:, None, None]
        np.testing.assert_allclose(b, want, atol=1e-5)

    def test_stats_count_what_was_delivered(self):
        r = self.reader()
        for _ in range(5):
            next(r)
        s = r.stats()
        self.assertEqual(s["batches"], 5)
        self.assertEqual(s["samples"], 5 * BATCH)
        self.assertGreater(s["bytes_read"], 0)
        self.assertGreater(s["memory_budget_bytes"], 0)
        self.assertGreaterEqual(s["consumer_wait_s"], 0)
        # The budget's parts that grow with the dataset: the index (4 bytes a
        # record at least) and the plans (8 a position of the plan held).
        self.assertGreaterEqual(s["index_bytes"], 4 * self.RECORDS)
        self.assertGreaterEqual(s["plan_peak_bytes"], 8 * 5 * BATCH)
        self.assertLessEqual(s["plan_peak_bytes"], s["plan_bytes"])
        self.assertGreater(s["memory_budget_bytes"], s["index_bytes"] + s["plan_bytes"])

    def test_gil_is_released_while_waiting(self):
        # With a long switch interval another thread gets the GIL only when
        # it is released: the ticks counted during next() prove it was.
        old = sys.getswitchinterval()
        sys.setswitchinterval(1.0)
        ticks, stop = [0], threading.Event()

        def tick():
            while not stop.is_set():
                ticks[0] += 1
                time.sleep(0.0001)

        t = threading.Thread(target=tick)
        t.start()
        during = 0
        try:
            for _ in range(5):
                # A fresh reader's first batch is built while next() waits.
                r = self.reader(threads=1, batch_size=512, copy=True)
                before = ticks[0]
                next(r)
                during += ticks[0] - before
        finally:
            stop.set()
            t.join()
            sys.setswitchinterval(old)
        self.assertGreater(during, 0)

    def test_errors_are_exceptions_with_the_readers_message(self):
        with self.assertRaisesRegex(FileNotFoundError, "no-such-dataset"):
            shardpack.Reader(os.path.join(self.tmp.path, "no-such-dataset"))
        with self.assertRaisesRegex(ValueError, "unknown transform 'sharpen'"):
            self.reader(transform="sharpen")
        with self.assertRaisesRegex(ValueError, r"rank 2 is out of range: 0 to 1 \(world_size 2\)"):
            self.reader(rank=2, world_size=2)
        with self.assertRaisesRegex(
                ValueError, r"rank -2 is out of range: -1 \(from RANK\) or 0 to world_size-1"):
            self.reader(rank=-2, world_size=2)
        with self.assertRaisesRegex(ValueError,
                                    r"threads 1000000 is out of range: 0 \(one per core\) to 1024"):
            self.reader(threads=10**6)
        with self.assertRaisesRegex(ValueError,
                                    r"ring_slots 100000 is out of range: 2 to 1024, or 0"):
            self.reader(ring_slots=100000)
        with self.assertRaisesRegex(ValueError, r"unknown layout 'NWHC' \(nhwc, nchw\)"):
            self.reader(layout="NWHC")
        with self.assertRaisesRegex(ValueError, "needs output='torch'"):
            self.reader(device="cuda")
        with self.assertRaisesRegex(ValueError, "device='gpu' is not one of"):
            self.reader(device="gpu")
        with self.assertRaisesRegex(ValueError, "float16 with device='cuda'"):
            self.reader(dtype="float16")

    def test_damaged_shard_raises_data_loss_naming_shard_and_offset(self):
        ds = fixtures.make_cifar_dataset(self.tmp.path, 200, name="damaged")
        shard = sorted(f for f in os.listdir(ds) if f.endswith(".shard"))[0]
        path = os.path.join(ds, shard)
        with open(path, "r+b") as f:
            f.seek(4096 + 32 + 1000)  # block 0's payload (docs/format.md, section 4)
            b = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([b[0] ^ 0x40]))
        r = shardpack.Reader(ds, batch_size=50, threads=1)
        with self.assertRaises(shardpack.DataLossError) as cm:
            for _ in r:
                pass
        self.assertRegex(str(cm.exception), rf"{shard} @\d+")
        self.assertIsInstance(cm.exception, shardpack.Error)
        skipped = shardpack.Reader(ds, batch_size=50, threads=1, on_corrupt="skip")
        self.assertEqual(sum(1 for _ in skipped), 4)
        self.assertGreater(skipped.stats()["skipped"], 0)


class InterruptTest(unittest.TestCase):
    """Ctrl-C while next() waits for a batch that does not come."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        # A record a block: with no shuffle or read-ahead budget the loader
        # waits 100 ms for room before each further block of a batch
        # (reader/pipeline.cc, MakeRoom), so a batch of 512 takes about a
        # minute to build, the CPU idle.
        cls.ds = fixtures.make_cifar_dataset(cls.tmp.path, 600, name="stalled",
                                             block_size="4KiB")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    # Regression: next() waited in C++ with the GIL released and Python ran
    # no signal handler until the batch came (a wedged reader: never).
    def test_ctrl_c_interrupts_next_within_a_second(self):
        r = shardpack.Reader(self.ds, batch_size=512, shuffle_bytes=1, read_ahead_bytes=0,
                             threads=1, rank=0, world_size=1)
        for attempt in range(2):  # again: the first left the reader usable
            timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
            start = time.monotonic()
            timer.start()
            try:
                with self.assertRaises(KeyboardInterrupt, msg="the batch came first: "
                                       "the stall this test relies on is gone"):
                    next(r)
            finally:
                timer.join()
            self.assertLess(time.monotonic() - start, 0.3 + 1.0, attempt)
            self.assertEqual(r.stats()["batches"], 0)  # nothing consumed
            self.assertEqual(r.state_dict()["batch"], 0)
        # Stopping does not wait for the half-built batch either.
        start = time.monotonic()
        del r
        gc.collect()
        self.assertLess(time.monotonic() - start, 2.0)


@unittest.skipIf(torch is None, "torch is not importable (Debian: python3-torch)")
class TorchTest(fixtures.DatasetTest):
    RECORDS = 300

    def reader(self, **kw):
        return shardpack.Reader(self.ds, batch_size=32, seed=3, threads=2, rank=0,
                                world_size=1, transform="cifar-train", **kw)

    def test_dlpack_tensors_equal_numpy_copies(self):
        for dtype, tdtype in (("uint8", torch.uint8), ("float32", torch.float32)):
            tensors = self.reader(output="torch", dtype=dtype, layout="NCHW")
            arrays = self.reader(copy=True, dtype=dtype, layout="NCHW")
            for (ti, tl), (ai, al) in zip(tensors, arrays):
                self.assertEqual(ti.dtype, tdtype)
                self.assertEqual(tl.dtype, torch.int64)
                self.assertEqual(tuple(ti.shape), (32, 3, 32, 32))
                self.assertTrue(ti.is_contiguous())
                self.assertTrue(np.array_equal(ti.numpy(), ai))
                self.assertTrue(np.array_equal(tl.numpy(), al))

    def test_tensors_hold_their_slot_until_freed(self):
        r = self.reader(output="torch", ring_slots=2)
        images, labels = next(r)
        del labels
        next(r)  # batch 1, in the other slot, freed at once
        with self.assertRaisesRegex(shardpack.Error, "still holds the ring slot"):
            next(r)
        del images  # the DLPack deleter gives the slot back
        self.assertEqual(next(r)[0].shape[0], 32)

    def test_cuda_tensors_equal_the_host_batches(self):
        # With a GPU: CUDA tensors, equal to the host batches (float32 made by
        # the device kernel). Without one: the reader says so once and the
        # tensors stay on the CPU, equal all the same.
        host = self.reader(output="torch", dtype="float32", layout="NCHW", copy=True)
        dev = self.reader(output="torch", dtype="float32", layout="NCHW", device="cuda")
        on_gpu = torch.cuda.is_available()
        for (hi, hl), (di, dl) in zip(host, dev):
            self.assertEqual(di.device.type, "cuda" if on_gpu else "cpu")
            self.assertEqual(dl.device.type, "cpu")
            self.assertEqual(di.dtype, torch.float32)
            self.assertEqual(tuple(di.shape), (32, 3, 32, 32))
            self.assertTrue(torch.allclose(di.cpu(), hi, atol=1e-5))
            self.assertTrue(torch.equal(dl, hl))

    def test_copied_tensors_are_owned(self):
        r = self.reader(output="torch", copy=True, ring_slots=2)
        kept = [next(r) for _ in range(5)]
        self.assertEqual(len(kept), 5)
        self.assertIsInstance(kept[0][0], torch.Tensor)


if __name__ == "__main__":
    unittest.main(verbosity=2)
