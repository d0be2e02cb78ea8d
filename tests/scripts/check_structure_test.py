#!/usr/bin/env python3
"""Tests of scripts/check-structure: which spellings of a call of the
operating system it flags, and that common/ and the allowlist pass."""
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts',
                      'check-structure')


def load_checker():
    loader = importlib.machinery.SourceFileLoader('check_structure', SCRIPT)
    spec = importlib.util.spec_from_loader('check_structure', loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


checker = load_checker()


def flagged(source):
    return list(checker.os_calls(checker.code_lines(source)))


class OsCallTest(unittest.TestCase):
    def test_bare_and_global_calls_are_flagged(self):
        self.assertEqual(flagged('if (stat(p.c_str(), &st) != 0) {}'), [(1, 'stat')])
        self.assertEqual(flagged('x;\n  ::fsync(fd);'), [(2, 'fsync')])
        self.assertEqual(flagged('madvise (p, n, MADV_WILLNEED);'), [(1, 'madvise')])
        self.assertEqual(flagged('pid_t pid = fork(); kill(pid, 9);'),
                         [(1, 'fork'), (1, 'kill')])

    def test_members_and_other_scopes_are_not(self):
        self.assertEqual(flagged('file.read(dst); file->close(); in.open();'), [])
        self.assertEqual(flagged('std::remove(a, b); common::Stat(p); Foo::write(x);'), [])
        self.assertEqual(flagged('ReadFull(fd); unlinked(x); my_stat(p);'), [])

    def test_comments_and_strings_are_not(self):
        self.assertEqual(flagged('// stat(path) fails here\nint x = 0;  // ::fsync(fd)'), [])
        self.assertEqual(flagged('/* a call of\n   open(path) */ y();'), [])
        self.assertEqual(flagged('Log("close(fd) failed"); Say(\'(\');'), [])
        self.assertEqual(flagged('auto s = R"(read(fd))";\nunlink(p);'), [(2, 'unlink')])


class TreeTest(unittest.TestCase):
    def run_on(self, files):
        with tempfile.TemporaryDirectory() as root:
            for path, text in files.items():
                os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(root, path), 'w', encoding='utf-8') as f:
                    f.write(text)
            return subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)

    def test_a_call_outside_common_is_a_breach_naming_file_and_line(self):
        run = self.run_on({'format/a.cc': 'namespace shardpack::format {\nint f() {\n'
                                          '  return ::fsync(3);\n}\n}\n'})
        self.assertEqual(run.returncode, 1)
        self.assertIn('format/a.cc:3: calls fsync()', run.stdout)

    def test_common_and_the_allowlist_pass(self):
        allowed = next(iter(checker.OS_CALL_ALLOWED), None)
        files = {'common/a.cc': 'namespace shardpack::common {\nint f() { return ::fsync(3); }\n}\n'}
        if allowed:
            files[allowed] = 'int g() { return ::fsync(3); }\n'
        run = self.run_on(files)
        self.assertEqual(run.returncode, 0, run.stdout)

    def test_thread_local_in_remote_or_reader_is_a_breach(self):
        # Which cache a file is read through is passed as a value (remote::Storage).
        for path, ns in (('remote/a.cc', 'remote'), ('reader/a.cc', 'reader')):
            run = self.run_on({path: f'namespace shardpack::{ns} {{\n'
                                     'thread_local int* scoped = nullptr;\n}\n'})
            self.assertEqual(run.returncode, 1, path)
            self.assertIn(f'{path}:2: thread_local', run.stdout)

    def test_every_allowlist_entry_says_why(self):
        for path, why in checker.OS_CALL_ALLOWED.items():
            self.assertGreater(len(why), 20, path)


if __name__ == '__main__':
    unittest.main()
