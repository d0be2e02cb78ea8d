#!/usr/bin/env python3
"""Tests of scripts/check-structure: which spellings of a call of the
operating system it flags, that common/ and the allowlist pass, and which
includes break the layering."""
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

    def test_backends_and_remote_include_neither_each_other_nor_the_dataset_layer(self):
        # Storage (backends/) and object stores (remote/) sit side by side on
        # format/; the dataset layer (dataset/) sits on both.
        for path, ns, include in (('backends/a.cc', 'backends', 'remote/storage.h'),
                                  ('backends/a.h', 'backends', 'dataset/open_path.h'),
                                  ('remote/a.cc', 'remote', 'backends/shard_gate.h'),
                                  ('remote/a.h', 'remote', 'dataset/view.h')):
            run = self.run_on({path: f'#include "{include}"\n'
                                     f'namespace shardpack::{ns} {{\n}}\n'})
            self.assertEqual(run.returncode, 1, path)
            self.assertIn(f'{path}:1: includes {include}: the layers go one way', run.stdout)

    def test_includes_of_lower_layers_and_public_headers_pass(self):
        run = self.run_on({
            'backends/a.cc': '#include "format/file_system.h"\n#include "common/errors.h"\n'
                             '#include "shardpack/file.h"\n#include "absl/status/status.h"\n'
                             'namespace shardpack::backends {\n}\n',
            'dataset/a.cc': '#include "backends/shard_gate.h"\n#include "remote/storage.h"\n'
                            'namespace shardpack::dataset {\n}\n',
            'remote/a.cc': '// not backends/: #include "backends/store.h" in a comment\n'
                           '#include "format/file_system.h"\nnamespace shardpack::remote {\n}\n'})
        self.assertEqual(run.returncode, 0, run.stdout)

    def test_every_library_has_its_layer(self):
        for library in checker.LIBRARIES:
            self.assertIn(library, checker.MAY_INCLUDE[library], library)

    def test_every_allowlist_entry_says_why(self):
        for path, why in checker.OS_CALL_ALLOWED.items():
            self.assertGreater(len(why), 20, path)


if __name__ == '__main__':
    unittest.main()
