"""shardpack.Reader over a mixture: path a list of sources (docs/python.md, Mixtures).

Each source's counts per epoch and per batch, the sources property and
stats()["source_samples"], state_dict / load_state_dict (exact and elastic),
the label spaces, and every bad source, count or keyword refused with a
message naming it. Run by ctest like reader_test.py; skipped without numpy.
"""
import collections
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402

fixtures.require("numpy")
import numpy as np  # noqa: E402

import shardpack  # noqa: E402

A, B = 300, 100  # records of the two sources


class MixtureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = fixtures.TempDir()
        cls.a = fixtures.make_cifar_dataset(cls.tmp.path, A, name="a", shuffle=False)
        cls.b = fixtures.make_cifar_dataset(cls.tmp.path, B, name="b", shuffle=False)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def mix(self, **kw):
        """a once and b twice an epoch: 300 + 200 samples, 12 + 8 in a batch of 20."""
        args = dict(batch_size=20, seed=5, threads=2, rank=0, world_size=1, indices=True,
                    copy=True)
        sources = kw.pop("sources", [{"path": self.a, "repeat": 1}, {"path": self.b, "repeat": 2}])
        args.update(kw)
        return shardpack.Reader(sources, **args)

    def epoch(self, reader, batches=None):
        """(records, labels, per-batch [from a, from b]) of the rest of the epoch, or of
        its next `batches` batches."""
        records, labels, per_batch = [], [], []
        for k, (images, lab, idx) in enumerate(reader):
            records += idx.tolist()
            labels.append(lab)
            per_batch.append([int((idx < A).sum()), int((idx >= A).sum())])
            if batches is not None and k + 1 == batches:
                break
        return records, (np.concatenate(labels) if labels else None), per_batch

    def test_each_source_draws_its_count_and_every_batch_its_share(self):
        r = self.mix()
        self.assertEqual(r.sources, [
            {"path": self.a, "records": A, "per_epoch": 300, "per_rank": 300},
            {"path": self.b, "records": B, "per_epoch": 200, "per_rank": 200}])
        self.assertEqual(r.records, A + B)
        self.assertEqual(len(r), 25)
        self.assertEqual(r.stats()["source_samples"], [0, 0])
        for epoch in range(2):
            records, labels, per_batch = self.epoch(r)
            times = collections.Counter(records)
            self.assertEqual(sorted(times), list(range(A + B)))
            self.assertTrue(all(times[i] == 1 for i in range(A)))
            self.assertTrue(all(times[i] == 2 for i in range(A, A + B)))
            self.assertEqual(per_batch, [[12, 8]] * 25)
            # One label space: both are CIFAR-10 (the same class names), labels as stored.
            local = np.array([i if i < A else i - A for i in records])
            np.testing.assert_array_equal(labels, local % 10)
        self.assertEqual(r.stats()["source_samples"], [600, 400])

    def test_weights_share_what_epoch_samples_leaves_and_choose_is_exact(self):
        r = self.mix(sources=[{"path": self.a, "weight": 3}, {"path": self.b, "weight": 1.0},
                              {"path": self.b, "choose": 40}], epoch_samples=440)
        self.assertEqual([s["per_epoch"] for s in r.sources], [300, 100, 40])
        records, _, _ = self.epoch(r)
        self.assertEqual(len(records), 440)
        self.assertEqual(r.stats()["source_samples"], [300, 100, 40])

    def test_ranks_take_equal_counts_of_each_source(self):
        got = []
        for rank in range(2):
            r = self.mix(rank=rank, world_size=2, batch_size=10)
            self.assertEqual([s["per_rank"] for s in r.sources], [150, 100])
            records, _, per_batch = self.epoch(r)
            self.assertEqual(per_batch, [[6, 4]] * 25)
            got += records
        times = collections.Counter(got)
        self.assertTrue(all(times[i] == 1 for i in range(A)))
        self.assertTrue(all(times[i] == 2 for i in range(A, A + B)))

    def test_state_dict_round_trip_continues_the_same_stream(self):
        whole, _, _ = self.epoch(self.mix())
        first = self.mix()
        head, _, _ = self.epoch(first, batches=9)
        state = first.state_dict()
        self.assertEqual(state["batch"], 9)
        second = self.mix()
        second.load_state_dict(state)
        tail, _, _ = self.epoch(second)
        self.assertEqual(head + tail, whole)
        self.assertEqual(second.stats()["source_samples"], [(25 - 9) * 12, (25 - 9) * 8])
        # Another mixture (other counts) refuses the state.
        other = self.mix(sources=[{"path": self.a, "repeat": 1}, {"path": self.b, "repeat": 3}])
        with self.assertRaisesRegex(ValueError, "a view or mixture that selects otherwise"):
            other.load_state_dict(state)
        with self.assertRaises(ValueError):
            shardpack.Reader(self.a, batch_size=20, seed=5).load_state_dict(state)

    def test_elastic_resume_onto_three_ranks_delivers_the_rest_once(self):
        seen = collections.Counter()
        for rank in range(2):
            r = self.mix(rank=rank, world_size=2, batch_size=10)
            records, _, _ = self.epoch(r, batches=7)
            seen.update(records)
            state = r.state_dict()
        counts = []
        for rank in range(3):
            r = self.mix(rank=rank, world_size=3, batch_size=8, remainder="partial")
            r.load_state_dict(state)
            counts.append(r.batches_in_epoch)
            records, _, _ = self.epoch(r)
            seen.update(records)
        self.assertEqual(len(set(counts)), 1)
        from_a = sum(seen[i] for i in range(A))
        from_b = sum(seen[i] for i in range(A, A + B))
        self.assertTrue(all(seen[i] <= 1 for i in range(A)))
        self.assertTrue(all(seen[i] <= 2 for i in range(A, A + B)))
        # What each split leaves over: at most world size - 1 a source and segment.
        self.assertGreaterEqual(from_a, 300 - 3)
        self.assertGreaterEqual(from_b, 200 - 3)

    def test_label_spaces_offset_or_tell_the_source(self):
        r = self.mix(label_space="offset")
        self.assertEqual(len(r.classes), 20)
        self.assertEqual(r.classes[10:], r.classes[:10])
        records, labels, _ = self.epoch(r)
        want = [i % 10 if i < A else 10 + (i - A) % 10 for i in records]
        np.testing.assert_array_equal(labels, want)

        r = self.mix(label_space="source")
        self.assertEqual([f["name"] for f in r.schema["labels"]][-1], "source")
        records, labels, _ = self.epoch(r)
        self.assertEqual(labels.shape, (500, 2))
        local = np.array([i if i < A else i - A for i in records])
        np.testing.assert_array_equal(labels[:, 0], local % 10)
        np.testing.assert_array_equal(labels[:, 1], [0 if i < A else 1 for i in records])

        r = self.mix(label_space="shared")
        self.assertEqual(len(r.classes), 10)

    def test_one_dataset_has_one_source_and_no_source_samples(self):
        r = shardpack.Reader(self.a, batch_size=20, rank=0, world_size=1)
        self.assertEqual(r.sources, [{"path": self.a, "records": A, "per_epoch": A,
                                      "per_rank": A}])
        next(iter(r))
        self.assertEqual(r.stats()["source_samples"], [])

    def refused(self, error, says, path=None, **kw):
        with self.assertRaises(error) as cm:
            self.mix(**({"sources": path} if path is not None else {}), **kw)
        message = str(cm.exception)
        self.assertRegex(message, says)
        self.assertNotIn("\n", message)
        self.assertLess(len(message), 400, message[:400])

    def test_every_bad_source_is_refused_naming_it(self):
        a, b = self.a, self.b
        src = lambda **k: [{"path": a, "repeat": 1}, dict({"path": b}, **k)]  # noqa: E731
        cases = [
            ([], ValueError, r"^path holds 0 sources: a mixture has 1 to 64$"),
            ([{"path": a, "repeat": 1}] * 65, ValueError, r"^path holds 65 sources"),
            ([a, b], TypeError, r'^path\[0\] must be a dict of "path" and one of .*, not str$'),
            (src(), ValueError, r'^path\[1\] sets none of "weight", "repeat" and "choose"'),
            (src(weight=1, repeat=1), ValueError, r"^path\[1\] sets more than one of"),
            (src(wieght=1), ValueError, r"^path\[1\] has an unknown key 'wieght' \(a source takes"),
            ([{"weight": 1}], ValueError, r'^path\[0\] has no "path"'),
            ([{"path": 3, "weight": 1}], TypeError,
             r'^path\[0\]\["path"\] must be a str, bytes or os.PathLike, not int$'),
            (src(weight=True), TypeError, r'^path\[1\]\["weight"\] must be a number, not bool$'),
            (src(weight="1"), TypeError, r'^path\[1\]\["weight"\] must be a number, not str$'),
            (src(weight=None), TypeError, r'^path\[1\]\["weight"\] must be a number, not NoneType'),
            (src(repeat=False), TypeError, r'^path\[1\]\["repeat"\] must be a number, not bool$'),
            (src(choose=True), TypeError, r'^path\[1\]\["choose"\] must be an int, not bool$'),
            (src(choose=1.5), TypeError, r'^path\[1\]\["choose"\] must be an int, not float$'),
        ]
        weight_range = "a finite number above 0"
        for bad in (0, 0.0, -1, -0.5, math.nan, math.inf, -math.inf, 10**400):
            shown = repr(bad) if bad != 10**400 else "an int of 1329 bits"
            cases.append((src(weight=bad), ValueError,
                          rf'^path\[1\]\["weight"\] {shown} is out of range: {weight_range}$'))
        for bad in (0, -2, math.nan, math.inf, 1025, 2000.5):
            cases.append((src(repeat=bad), ValueError,
                          rf'^path\[1\]\["repeat"\] {bad!r} is out of range: a number above 0, '
                          rf'at most 1024$'))
        for bad in (0, -1, 2**64):
            cases.append((src(choose=bad), ValueError,
                          rf'^path\[1\]\["choose"\] {bad} is out of range: 1 to 2\*\*64-1$'))
        # What depends on the records: the reader's own words, naming the source.
        cases += [
            (src(repeat=0.001), ValueError, r"^sources\[1\] \('.*b'\).*draws no sample an epoch"),
            (src(choose=102401), ValueError, r"^sources\[1\] \('.*b'\): choose 102401 is more than"),
            ([{"path": os.path.join(a, "missing"), "weight": 1}], FileNotFoundError, "missing"),
        ]
        for path, error, says in cases:
            with self.subTest(path=repr(path)[:120]):
                self.refused(error, says, path)

    def test_bad_epoch_samples_and_label_space_are_refused_naming_them(self):
        for bad, type_name in ((True, "bool"), (1.0, "float"), ("3", "str"), (None, "NoneType")):
            self.refused(TypeError, rf"^epoch_samples must be an int, not {type_name}$",
                         epoch_samples=bad)
        for bad in (-1, 2**64):
            self.refused(ValueError, rf"^epoch_samples {bad} is out of range: 0 to 2\*\*64-1$",
                         epoch_samples=bad)
        self.refused(ValueError, r"epoch_samples 7, but the sources draw 500", epoch_samples=7)
        self.refused(TypeError, r"^label_space must be a str, not int$", label_space=1)
        self.refused(ValueError, r"label_space.*'sideways'.*shared, offset, source",
                     label_space="sideways")


if __name__ == "__main__":
    unittest.main()
