"""shardpack without numpy (or without torch): it imports, and says what it needs.

Each case runs a child python whose import system refuses `numpy` (and, in
some, `torch`) as if they were not installed: a finder first on sys.meta_path.
The module must import; Reader(output="numpy") must raise an ImportError that
names numpy and how to get it (not pybind11's at the first array);
output="torch" must work with torch and no numpy (copy=True and indices=True
too); without torch it must name torch.
"""
import os
import subprocess
import sys
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures  # noqa: E402

try:
    import torch  # noqa: F401
except ImportError:
    torch = None

HIDE = textwrap.dedent("""
    import sys

    class Hidden:
        '''Refuses the modules named in HIDDEN, as if they were not installed.'''
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in HIDDEN:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Hidden())
""")


class NoNumpyTest(fixtures.DatasetTest):
    RECORDS = 100

    def run_hidden(self, hidden, code):
        """Runs `code` in a child python that cannot import the modules in `hidden`."""
        program = f"HIDDEN = {set(hidden)!r}\n{HIDE}\nDS = {self.ds!r}\n{textwrap.dedent(code)}"
        p = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p.stdout

    def test_reader_for_numpy_says_it_needs_numpy(self):
        out = self.run_hidden({"numpy"}, """
            import shardpack
            assert "numpy" not in sys.modules
            try:
                shardpack.Reader(DS)
            except ImportError as e:
                print(e)
        """)
        self.assertIn("shardpack.Reader(output='numpy') needs numpy (pip install numpy; "
                      "Debian: python3-numpy); or pass output='torch': No module named 'numpy'",
                      out)

    def test_contact_sheet_says_it_needs_numpy(self):
        out = self.run_hidden({"numpy"}, """
            import shardpack
            try:
                shardpack.contact_sheet([[[[0, 0, 0]]]], [0])
            except ImportError as e:
                print(e)
        """)
        self.assertIn("shardpack.contact_sheet needs numpy (pip install numpy", out)

    def test_reader_for_torch_says_it_needs_torch(self):
        out = self.run_hidden({"numpy", "torch"}, """
            import shardpack
            for make in (lambda: shardpack.Reader(DS, output="torch"),
                         lambda: shardpack.DataLoader(DS)):
                try:
                    make()
                except ImportError as e:
                    print(e)
        """)
        expected = ("shardpack.Reader(output='torch') needs PyTorch (pip install torch; "
                    "Debian: python3-torch): No module named 'torch'")
        self.assertEqual(out.count(expected), 2, out)

    @unittest.skipIf(torch is None, "torch is not importable (Debian: python3-torch)")
    def test_torch_output_needs_no_numpy(self):
        out = self.run_hidden({"numpy"}, """
            import warnings
            warnings.simplefilter("ignore")  # torch's own note that numpy is missing
            import shardpack, torch
            for copy in (False, True):
                reader = shardpack.Reader(DS, batch_size=10, output="torch", copy=copy,
                                          indices=True, shuffle=False)
                images, labels, indices = next(reader)
                assert images.shape == (10, 32, 32, 3) and images.dtype == torch.uint8
                print(copy, labels.tolist(), indices.tolist())
            assert "numpy" not in sys.modules
        """)
        views, copies = out.splitlines()
        self.assertRegex(views, r"^False \[(\d, ){9}\d\] \[0, 1, 2, 3, 4, 5, 6, 7, 8, 9\]$")
        self.assertEqual(copies, views.replace("False", "True"))


if __name__ == "__main__":
    unittest.main()
