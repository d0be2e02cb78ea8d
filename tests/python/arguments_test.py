"""shardpack.Reader's arguments: every wrong one is a TypeError or ValueError in one line.

Each message names the argument (or the environment variable, or the state's
key) and says what is accepted; none is pybind11's signature dump ("incompatible
function arguments", "Invoked with") or "Unable to cast", and none echoes a huge
value whole. Run by ctest like reader_test.py.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402

fixtures.require("numpy")
import numpy as np  # noqa: E402

import shardpack  # noqa: E402

PYBIND11_WORDS = ("incompatible", "Invoked with", "Unable to cast", "(self:", "\n")


class ArgumentsTest(fixtures.DatasetTest):
    RECORDS = 200

    def refused(self, call, error, says, *args, **kw):
        """Asserts call(*args, **kw) raises `error` whose message matches `says`, in one
        short line with none of pybind11's words."""
        with self.assertRaises(error) as cm:
            call(*args, **kw)
        message = str(cm.exception)
        self.assertRegex(message, says)
        for word in PYBIND11_WORDS:
            self.assertNotIn(word, message)
        self.assertLess(len(message), 400, message[:400])
        return message

    def reader(self, **kw):
        args = dict(batch_size=50, rank=0, world_size=1, threads=1)
        args.update(kw)
        return shardpack.Reader(self.ds, **args)

    def test_each_int_argument_names_itself_for_a_wrong_type_or_range(self):
        ranges = {
            "batch_size": r"1 to 1048576",
            "threads": r"0 \(one per core\) to 1024",
            "ring_slots": r"2 to 1024, or 0 \(chosen\)",
            "rank": r"-1 \(from RANK\) or 0 to world_size-1",
            "world_size": r"-1 \(from WORLD_SIZE\) or 1 to 1048576",
            "seed": r"0 to 2\*\*64-1",
            "shuffle_bytes": r"0 to 2\*\*64-1",
            "read_ahead_bytes": r"0 to 2\*\*64-1",
        }
        for name, accepted in ranges.items():
            with self.subTest(name=name):
                for bad, type_name in ((None, "NoneType"), (True, "bool"), (1.0, "float"),
                                       ("3", "str"), (b"3", "bytes"), ([3], "list")):
                    self.refused(self.reader, TypeError,
                                 rf"^{name} must be an int, not {type_name}$", **{name: bad})
                for bad in (-2, 10**30, -10**30):
                    self.refused(self.reader, ValueError,
                                 rf"^{name} {bad} is out of range: {accepted}", **{name: bad})
                # An int of a million digits is not printed (Python refuses past 4300).
                self.refused(self.reader, ValueError,
                             rf"^{name} an int of 3321929 bits is out of range: {accepted}",
                             **{name: 10**1000000})
        # numpy ints are ints; the values at the ends of each range work.
        r = self.reader(batch_size=np.int64(50), seed=2**64 - 1, shuffle_bytes=2**64 - 1,
                        read_ahead_bytes=0, threads=np.uint16(2))
        self.assertEqual(next(r)[0].shape[0], 50)

    def test_each_str_bool_and_triple_argument_names_itself(self):
        for name in ("transform", "io", "remainder", "layout", "dtype", "on_corrupt", "output",
                     "device"):
            with self.subTest(name=name):
                for bad, type_name in ((None, "NoneType"), (3, "int"), (b"none", "bytes")):
                    self.refused(self.reader, TypeError,
                                 rf"^{name} must be a str, not {type_name}$", **{name: bad})
                # Unknown text is echoed bounded: its start and its length.
                self.refused(self.reader, ValueError,
                             r"^(unknown .*|.*=)'q{64}\.\.\. \(10000000 bytes\)'",
                             **{name: "q" * 10**7})
                self.refused(self.reader, ValueError, r"not valid text|is not one of|unknown",
                             **{name: "\ud800"})
        for name in ("shuffle", "copy", "indices"):
            with self.subTest(name=name):
                for bad, type_name in ((None, "NoneType"), (1, "int"), ("yes", "str")):
                    self.refused(self.reader, TypeError,
                                 rf"^{name} must be a bool, not {type_name}$", **{name: bad})
        self.reader(shuffle=np.bool_(False))  # numpy's bool is a bool
        for name in ("mean", "std"):
            with self.subTest(name=name):
                self.refused(self.reader, TypeError, rf"^{name} must be a sequence of 3 numbers",
                             **{name: "abc"})
                self.refused(self.reader, TypeError, rf"^{name} must be a sequence of 3 numbers",
                             **{name: None})
                self.refused(self.reader, ValueError, rf"^{name} \(1, 2\) holds 2 numbers",
                             **{name: (1, 2)})
                self.refused(self.reader, TypeError, rf"^{name}\[1\] must be a number, not str$",
                             **{name: (1, "2", 3)})
                self.refused(self.reader, TypeError, rf"^{name}\[2\] must be a number, not bool$",
                             **{name: (1, 2, True)})
                for bad in (float("nan"), float("inf"), 1e300):
                    self.refused(self.reader, ValueError, rf"^{name}\[0\] .* is out of range: "
                                 r"a finite number", **{name: (bad, 1, 1)})
        self.refused(self.reader, ValueError, r"^std\[1\] 0 is out of range: a finite number, "
                     r"not 0", dtype="float32", std=(1, 0, 1))
        self.reader(mean=np.array([0.5, 0.5, 0.5]), std=[1, 2, np.float32(3)])

    def test_keywords_are_the_option_tables_and_the_docs(self):
        # The keywords come from reader/option_table.h; docs/python.md's table
        # names each of them and no other (tests/reader/option_table_test.cc
        # checks its defaults against the table).
        with self.assertRaises(TypeError) as caught:
            shardpack.Reader(self.ds, no_such_keyword=1)
        listed = str(caught.exception).split(" (", 1)[1].rstrip(")").split(", ")
        docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                            "python.md")
        with open(docs, encoding="utf-8") as f:
            text = f.read()
        table = text[text.index("| keyword | default | meaning |"):].split("\n")[2:]
        documented = set()
        for line in table:
            if not line.startswith("|"):
                break
            for name in line.split(" | ")[0].lstrip("| ").split(", "):
                documented.add(name.strip("`"))
        self.assertEqual(listed[0], "path")
        self.assertEqual(len(listed), len(set(listed)))
        self.assertEqual(set(listed) - {"path"}, documented)

    def test_the_call_itself_is_checked_as_python_checks_it(self):
        self.refused(shardpack.Reader, TypeError, r"^Reader\(\) missing required argument 'path'$")
        self.refused(shardpack.Reader, TypeError,
                     r"^Reader\(\) takes 1 positional argument \(path\) but 2 were given: "
                     r"pass the others by keyword$", self.ds, 50)
        self.refused(shardpack.Reader, TypeError,
                     r"^Reader\(\) got an unexpected keyword argument 'batchsize' "
                     r"\(path, batch_size,",
                     self.ds, batchsize=50)
        self.refused(shardpack.Reader, TypeError,
                     r"^Reader\(\) got multiple values for argument 'path'$", self.ds, path=self.ds)
        r = self.reader()
        self.refused(r.set_epoch, TypeError, r"^set_epoch\(\) missing required argument 'epoch'$")
        self.refused(r.set_epoch, TypeError, r"^set_epoch\(\) takes 1 positional argument "
                     r"\(epoch\) but 2 were given$", 1, 2)
        self.refused(r.set_epoch, TypeError,
                     r"^set_epoch\(\) got an unexpected keyword argument 'epok' \(epoch\)$", epok=1)
        for method in (r.state_dict, r.stats):
            self.refused(method, TypeError, r"takes no positional arguments but 1 was given$", 1)
            self.refused(method, TypeError, r"unexpected keyword argument 'x' \(it takes none\)$",
                         x=1)
        self.refused(r.load_state_dict, TypeError,
                     r"^load_state_dict\(\) missing required argument 'state'$")
        r.set_epoch(epoch=1)
        r.load_state_dict(state=r.state_dict())
        self.assertEqual(r.state_dict()["epoch"], 1)

    def test_set_epoch_takes_0_to_2_63_minus_1(self):
        r = self.reader()
        for bad in (-1, 2**63, 2**64 - 1, 2**64):
            self.refused(r.set_epoch, ValueError,
                         rf"^epoch {bad} is out of range: 0 to 2\*\*63-1$", bad)
        for bad, type_name in ((None, "NoneType"), (1.0, "float"), (True, "bool"), ("1", "str")):
            self.refused(r.set_epoch, TypeError, rf"^epoch must be an int, not {type_name}$", bad)
        # The last epoch delivers its batches and ends; no epoch follows it.
        r.set_epoch(2**63 - 1)
        self.assertEqual(sum(1 for _ in r), len(r))
        self.refused(next, shardpack.Error, r"epoch 9223372036854775807 \(2\^63-1\) was the last",
                     r)
        self.assertEqual(r.state_dict()["epoch"], 2**63 - 1)

    def test_paths_of_every_kind_and_the_bad_ones(self):
        for path in (self.ds, self.ds.encode(), __import__("pathlib").Path(self.ds)):
            self.assertEqual(shardpack.Reader(path, batch_size=50).records, self.RECORDS)
        for bad, type_name in ((None, "NoneType"), (3, "int"), ({"x": 1}, "dict")):
            self.refused(shardpack.Reader, TypeError,
                         rf"^path must be a str, bytes or os.PathLike, not {type_name}$", bad)
        # A list is a mixture's sources (mixture_test.py checks them).
        self.refused(shardpack.Reader, TypeError, r"^path\[0\] must be a dict of \"path\"", ["x"])
        # A NUL would have cut the path the system sees: the dataset without its suffix.
        self.refused(shardpack.Reader, ValueError,
                     r"holds a NUL byte \(at byte \d+\): a path is text without NULs",
                     self.ds + "\0-not-this")
        self.refused(shardpack.Reader, ValueError,
                     r"^path 'x{64}\.\.\. \(1000000 bytes\)' is too long: at most 4095 bytes$",
                     "x" * 10**6)

    def test_a_nul_in_any_path_argument_is_refused(self):
        # cache_dir and a mixture's paths were cut at the NUL.
        nul = r"holds a NUL byte \(at byte \d+\): a path is text without NULs$"
        self.refused(shardpack.Reader, ValueError, rf"^cache_dir '.*' {nul}", self.ds,
                     cache_dir="/tmp/cache\0-not-this")
        self.refused(shardpack.Reader, ValueError, rf"^path\[1\]\[\"path\"\] '.*' {nul}",
                     [{"path": self.ds, "weight": 1}, {"path": self.ds + "\0x", "weight": 1}])
        self.refused(shardpack.Dataset, ValueError, rf"^cache_dir '.*' {nul}", self.ds,
                     cache_dir=b"/tmp/cache\0")

    def test_a_nul_in_a_message_does_not_cut_it(self):
        # Messages are one line of text (common::OneLine): the NUL is shown escaped, and
        # everything after it is still there.
        message = self.refused(self.reader, ValueError, r"unknown I/O engine", io="pre\0ad")
        self.assertIn("pre\\x00ad' (auto, pread", message)
        self.assertNotIn("\0", message)

    def test_rank_and_world_size_from_the_environment_are_named(self):
        saved = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE")}
        cases = [
            ({"WORLD_SIZE": "1048577"}, r"^WORLD_SIZE=1048577 is out of range: 1 to 1048576$"),
            ({"WORLD_SIZE": "0"}, r"^WORLD_SIZE=0 is out of range: 1 to 1048576$"),
            ({"WORLD_SIZE": "four"}, r"^WORLD_SIZE='four' is not an integer: 1 to 1048576$"),
            ({"WORLD_SIZE": "9" * 30}, r"^WORLD_SIZE=9{30} is out of range"),
            ({"WORLD_SIZE": "2", "RANK": "2"},
             r"^RANK=2 is out of range: 0 to 1 \(WORLD_SIZE=2\)$"),
            ({"RANK": "1"}, r"^RANK=1 is out of range: 0 to 0 \(WORLD_SIZE unset: 1\)$"),
            ({"WORLD_SIZE": "2", "RANK": "-1"}, r"^RANK=-1 is out of range: 0 to 1048575$"),
            ({"WORLD_SIZE": "2", "RANK": "7" * 300}, r"^RANK=7{64}\.\.\. \(300 bytes\) is out"),
        ]
        try:
            for env, says in cases:
                with self.subTest(env=env):
                    for key in ("RANK", "WORLD_SIZE"):
                        os.environ.pop(key, None)
                    os.environ.update(env)
                    self.refused(shardpack.Reader, ValueError, says, self.ds, batch_size=50)
            os.environ.update(WORLD_SIZE="2", RANK="1")
            self.assertEqual(shardpack.Reader(self.ds, batch_size=50).state_dict()["world_size"], 2)
            self.refused(shardpack.Reader, ValueError,
                         r"^RANK=1 is out of range: 0 to 0 \(world_size 1\)$", self.ds,
                         world_size=1)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def test_a_rejected_state_is_quoted_short(self):
        r = self.reader()
        good = r.state_dict()
        huge = "s" * 10**7
        cases = [
            (huge, r"^state_dict is 's{63}\.\.\. \(10000002 bytes\): it must be a dict"),
            (dict(good, epoch=huge), r"^state_dict\['epoch'\] is 's{63}\.\.\. \(10000002 bytes\)"),
            (dict(good, fingerprint=huge), r"^state_dict\['fingerprint'\] is 's{63}\.\.\. "),
            (dict(good, earlier=[{"x": 1}] * 10**6), r"^state_dict\['earlier'\] is \[\{'x': 1\}"),
            (dict(good, seed=10**100000), r"^state_dict\['seed'\] is an int of 332193 bits"),
            (dict(good, remainder="\ud800"), r"^state_dict\['remainder'\] is '\\ud800'"),
            (dict(good, batch=[0] * 10**6), r"^state_dict\['batch'\] is \[0, 0"),
        ]
        for state, says in cases:
            with self.subTest(says=says):
                self.refused(r.load_state_dict, ValueError, says, state)
        self.assertEqual(r.state_dict(), good)

    def test_contact_sheet_names_its_arguments_too(self):
        images, labels = np.zeros((2, 8, 8, 3), np.uint8), np.array([1, 2])
        sheet = shardpack.contact_sheet
        self.refused(sheet, TypeError, r"^contact_sheet\(\) missing required argument 'labels'$",
                     images)
        self.refused(sheet, TypeError, r"^contact_sheet\(\) takes 5 positional arguments "
                     r"\(images, labels, classes, columns, tile\) but 6 were given",
                     images, labels, None, None, 16, (0, 0, 0))
        self.refused(sheet, TypeError, r"^tile must be an int, not str$", images, labels, tile="x")
        self.refused(sheet, ValueError, r"^tile 1099511627776 is out of range: 16 to 1024",
                     images, labels, tile=2**40)
        self.refused(sheet, ValueError, r"^columns -1 is out of range", images, labels, columns=-1)
        self.refused(sheet, ValueError, r"^indices\[\] -1 is out of range", images, labels,
                     indices=[-1, 2])
        self.refused(sheet, TypeError, r"^classes must be a list of names", images, labels,
                     classes=5)
        self.refused(sheet, TypeError, r"^mean\[0\] must be a number, not str$", images, labels,
                     mean=("a", 1, 1))
        self.refused(sheet, TypeError, r"^layout must be a str, not int$", images, labels,
                     layout=3)
        self.assertEqual(sheet(images, labels, tile=16, classes=["a", "\ud800", "c"]).ndim, 3)


if __name__ == "__main__":
    unittest.main(verbosity=2)
