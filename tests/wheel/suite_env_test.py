"""The Python suite runs in two places: ctest (tests/python/CMakeLists.txt's
ENVIRONMENT) and wheel_test.sh (against the installed wheel, its exports).
Every variable a test script reads with os.environ["NAME"] must be given by
both, or the suite fails in one of them only (as fields_test.py's
MAKE_BOX_DATASET once did in the wheel's run). Reads the files; builds
nothing.
"""
import glob
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def required_variables():
    """NAME -> the test scripts that read os.environ["NAME"] (no default)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "python", "*.py"))):
        with open(path, encoding="utf-8") as f:
            for name in re.findall(r'os\.environ\["([A-Z0-9_]+)"\]', f.read()):
                out.setdefault(name, []).append(os.path.basename(path))
    return out


class SuiteEnvironmentTest(unittest.TestCase):
    def test_the_scan_finds_what_the_suite_reads(self):
        # the scan itself: a variable every fixture-making test reads
        self.assertIn("SHARDPACK_TOOL", required_variables())

    def test_ctest_gives_every_variable(self):
        cmake = read("tests", "python", "CMakeLists.txt")
        for name, scripts in required_variables().items():
            self.assertRegex(cmake, rf"[\";]{name}=", f"{name}, read by {scripts}")

    def test_the_wheel_test_gives_every_variable(self):
        exports = " ".join(line for line in read("tests", "wheel", "wheel_test.sh").splitlines()
                           if line.startswith("export "))
        for name, scripts in required_variables().items():
            self.assertRegex(exports, rf"\b{name}=", f"{name}, read by {scripts}")


if __name__ == "__main__":
    unittest.main()
