"""Datasets in an object store, end to end: shardpack.Reader, sharddump,
shardbench and shardpack convert on s3:// (moto) and https:// (nginx)
datasets give what they give on the local copy, through the block cache
and through faults.

Run by ctest with /usr/bin/python3 and PYTHONPATH at the build tree's module
(tests/remote/CMakeLists.txt). Skipped (exit 77, with the reason) without
numpy, nginx, build/venv-remote or tests/remote/fault_proxy.py, and while
shardpack.Reader takes no cache_dir / cache_bytes.

The servers run for the whole script: one dataset, packed at start, served
by nginx over TLS from its parent directory and uploaded to moto. Every
reader of a test gets a cache directory of its own unless the test shares
one on purpose.
"""
import contextlib
import gc
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import fixtures  # noqa: E402  (tests/python/fixtures.py)
import servers  # noqa: E402

fixtures.require("numpy")
servers.require(servers.missing_nginx(), servers.missing_moto(), servers.missing_fault_proxy())
import shardpack  # noqa: E402

RECORDS = 1000
SHARD_RECORDS = 300
BLOCK = "16KiB"
BUCKET = "shardpack-e2e"
READER = dict(batch_size=32, seed=5, threads=2, rank=0, world_size=1, transform="cifar-train")

# Set by main(): the servers and the dataset every test reads.
S = None


class Setup:
    """The dataset (local), nginx serving its parent over TLS, moto holding
    it under s3://BUCKET/ds/."""

    def __init__(self, stack):
        self.tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="shardpack-e2e-"))
        self.root = os.path.join(self.tmp, "root")
        os.makedirs(self.root)
        self.local = fixtures.make_cifar_dataset(self.root, RECORDS, name="ds", block_size=BLOCK,
                                                 shard_records=SHARD_RECORDS)
        self.files = sorted(os.listdir(self.local))
        self.shards = [f for f in self.files if f.endswith(".shard")]
        self.dataset_bytes = sum(os.path.getsize(os.path.join(self.local, f))
                                 for f in self.files)
        self.block_bytes = 16 * 1024
        self.nginx = stack.enter_context(servers.Nginx(self.root, tls=True))
        self.s3 = stack.enter_context(servers.MotoS3())
        self.s3.upload(BUCKET, "ds", self.local)
        self.https_url = self.nginx.url + "ds/"
        self.s3_url = f"s3://{BUCKET}/ds/"
        # What a remote reader reads from the environment; a test that puts
        # a proxy in front of moto changes AWS_ENDPOINT_URL for its readers.
        # Nothing of the machine's own AWS setup may take precedence
        # (remote/aws_config.h: AWS_ENDPOINT_URL_S3 before AWS_ENDPOINT_URL).
        for name in ("SHARDPACK_CACHE_DIR", "SHARDPACK_CACHE_BYTES", "AWS_ENDPOINT_URL_S3",
                     "AWS_SESSION_TOKEN", "AWS_PROFILE"):
            os.environ.pop(name, None)
        os.environ.update(self.s3.env())
        for name in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):
            os.environ[name] = os.path.join(self.tmp, name.lower())
            open(os.environ[name], "w").close()
        os.environ["SHARDPACK_CA_BUNDLE"] = self.nginx.ca_file
        # A test that goes wrong fails in seconds, not after the default 120 s.
        os.environ["SHARDPACK_REMOTE_DEADLINE_S"] = "30"

    def cache_dir(self):
        return tempfile.mkdtemp(prefix="cache-", dir=self.tmp)


def unsupported():
    """Why this tree cannot run these tests (None when it can): the reader
    must take a URL with cache_dir and cache_bytes."""
    try:
        shardpack.Reader(S.https_url, batch_size=8, cache_dir=S.cache_dir(), cache_bytes=1 << 20)
    except TypeError as e:
        if "cache_dir" in str(e) or "cache_bytes" in str(e):
            return f"shardpack.Reader takes no cache_dir / cache_bytes yet (issue 35): {e}"
        raise
    return None


def digests(reader, limit=None):
    """One sha256 a batch, of its pixels then its labels, for `limit` batches
    (None: the rest of the epoch)."""
    out = []
    for images, labels in reader:
        h = hashlib.sha256(memoryview(images).cast("B"))
        h.update(memoryview(labels).cast("B"))
        out.append(h.hexdigest())
        if limit is not None and len(out) == limit:
            break
    return out


def dir_bytes(path):
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except FileNotFoundError:
                pass  # evicted or renamed while we looked
    return total


def dir_files(path):
    """(relative path, bytes) of each file under path, the largest first."""
    out = []
    for dirpath, _, files in os.walk(path):
        for name in files:
            full = os.path.join(dirpath, name)
            try:
                out.append((os.path.relpath(full, path), os.path.getsize(full)))
            except FileNotFoundError:
                pass
    return sorted(out, key=lambda e: -e[1])


@contextlib.contextmanager
def environ(**values):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update({k: str(v) for k, v in values.items()})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class RemoteTest(unittest.TestCase):
    local_epochs = {}

    def setUp(self):
        # The readers of earlier tests are gone, their datasets closed.
        gc.collect()

    def local_digests(self, epoch=0):
        if epoch not in self.local_epochs:
            r = shardpack.Reader(S.local, **READER)
            r.set_epoch(epoch)
            self.local_epochs[epoch] = digests(r)
        return self.local_epochs[epoch]

    def reader(self, url, cache_dir=None, cache_bytes=1 << 40, **kw):
        args = dict(READER, cache_dir=cache_dir or S.cache_dir(), cache_bytes=cache_bytes)
        args.update(kw)
        return shardpack.Reader(url, **args)

    def s3_through(self, proxy):
        """The s3:// readers opened in this context go through `proxy`."""
        return environ(AWS_ENDPOINT_URL=proxy.endpoint)

    def assertRemoteStats(self, reader):
        remote = reader.stats()["remote"]
        for key in ("requests", "bytes", "retries", "cache_hits", "cache_misses"):
            self.assertIn(key, remote)
            self.assertGreaterEqual(remote[key], 0, key)
        return remote


class ReaderTest(RemoteTest):
    def test_s3_dataset_gives_the_batches_of_its_local_copy(self):
        r = self.reader(S.s3_url)
        self.assertEqual(len(r), len(self.local_digests()))
        self.assertEqual(r.fingerprint, shardpack.Reader(S.local, **READER).fingerprint)
        self.assertEqual(digests(r), self.local_digests())
        remote = self.assertRemoteStats(r)
        self.assertGreater(remote["requests"], 0)
        self.assertGreater(remote["cache_misses"], 0)
        # Every byte came once (a cache as large as the dataset): the blocks
        # within a shard's tail, read at open with its footer, are checked
        # there and not fetched again; the manifest is the only other object.
        self.assertLessEqual(remote["bytes"], S.dataset_bytes + 64 * 1024)

    def test_https_dataset_gives_the_batches_of_its_local_copy(self):
        r = self.reader(S.https_url)
        self.assertEqual(digests(r), self.local_digests())
        self.assertGreater(self.assertRemoteStats(r)["requests"], 0)

    def test_a_second_epoch_within_the_budget_makes_no_request(self):
        r = self.reader(S.https_url)
        self.assertEqual(digests(r), self.local_digests(0))
        S.nginx.clear_requests()
        before = r.stats()["remote"]
        r.set_epoch(1)
        self.assertEqual(digests(r), self.local_digests(1))
        self.assertEqual(S.nginx.requests(), [])
        after = r.stats()["remote"]
        self.assertEqual(after["requests"], before["requests"])
        self.assertEqual(after["cache_misses"], before["cache_misses"])

    def test_a_new_reader_on_a_warm_cache_makes_no_shard_request(self):
        cache = S.cache_dir()
        self.assertEqual(digests(self.reader(S.https_url, cache)), self.local_digests())
        S.nginx.clear_requests()
        self.assertEqual(digests(self.reader(S.https_url, cache)), self.local_digests())
        shard_requests = [e for e in S.nginx.requests() if e["path"].endswith(".shard")]
        self.assertEqual(shard_requests, [])

    def test_two_live_readers_of_one_url_each_use_their_own_cache_dir(self):
        first, second = S.cache_dir(), S.cache_dir()
        a = self.reader(S.https_url, first)
        self.assertEqual(digests(a), self.local_digests())
        b = self.reader(S.https_url, second)
        self.assertEqual(digests(b), self.local_digests())
        self.assertGreater(dir_bytes(first), 0)
        self.assertGreater(dir_bytes(second), 0)
        self.assertGreater(b.stats()["remote"]["cache_kept"], 0)
        del a

    def test_a_cache_of_a_tenth_of_the_dataset_streams_within_its_budget(self):
        cache, budget = S.cache_dir(), S.dataset_bytes // 10
        largest, at_largest = 0, []
        r = self.reader(S.s3_url, cache, budget)
        got = []
        for epoch in (0, 1):
            r.set_epoch(epoch)
            for images, labels in r:
                h = hashlib.sha256(memoryview(images).cast("B"))
                h.update(memoryview(labels).cast("B"))
                got.append(h.hexdigest())
                if dir_bytes(cache) > largest:
                    largest, at_largest = dir_bytes(cache), dir_files(cache)
        self.assertEqual(got, self.local_digests(0) + self.local_digests(1))
        # Never more than the budget plus one block being published.
        biggest_file = max((size for _, size in at_largest), default=0)
        self.assertLessEqual(largest, budget + max(S.block_bytes, biggest_file),
                             f"budget {budget}; at the largest, {len(at_largest)} files: "
                             f"{at_largest[:3]} ... {at_largest[-3:]}")
        self.assertGreater(largest, 0)
        # The second epoch had to fetch again: the cache cannot hold it all.
        self.assertGreater(r.stats()["remote"]["cache_misses"], 0)

    def test_a_users_file_in_the_cache_dir_survives_eviction(self):
        cache, budget = S.cache_dir(), S.dataset_bytes // 10
        mine = os.path.join(cache, "my-notes.txt")
        with open(mine, "wb") as f:
            f.write(b"not the cache's" * 1000)
        sub = os.path.join(cache, "mine")
        os.makedirs(sub)
        with open(os.path.join(sub, "weights.bin"), "wb") as f:
            f.write(b"\x01" * 4096)
        r = self.reader(S.https_url, cache, budget)
        self.assertEqual(digests(r), self.local_digests())
        with open(mine, "rb") as f:
            self.assertEqual(f.read(), b"not the cache's" * 1000)
        with open(os.path.join(sub, "weights.bin"), "rb") as f:
            self.assertEqual(f.read(), b"\x01" * 4096)

    def test_two_processes_sharing_one_cache_dir_both_get_the_right_batches(self):
        cache = S.cache_dir()
        script = (
            "import hashlib, json, sys, shardpack\n"
            "r = shardpack.Reader(sys.argv[1], cache_dir=sys.argv[2], cache_bytes=int(sys.argv[3]),"
            " **json.loads(sys.argv[4]))\n"
            "out = []\n"
            "for images, labels in r:\n"
            "    h = hashlib.sha256(memoryview(images).cast('B'))\n"
            "    h.update(memoryview(labels).cast('B'))\n"
            "    out.append(h.hexdigest())\n"
            "print(json.dumps(out))\n")
        for budget in (1 << 40, S.dataset_bytes // 5):
            procs = [subprocess.Popen([sys.executable, "-c", script, url, cache, str(budget),
                                       json.dumps(READER)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
                     for url in (S.s3_url, S.s3_url)]
            for p in procs:
                out, err = p.communicate(timeout=300)
                self.assertEqual(p.returncode, 0, err)
                self.assertEqual(json.loads(out), self.local_digests(), budget)

    def test_exact_resume_mid_epoch_gives_the_rest_of_the_local_epoch(self):
        local = self.local_digests()
        for url in (S.s3_url, S.https_url):
            r = self.reader(url)
            head = digests(r, 7)
            self.assertEqual(head, local[:7])
            state = r.state_dict()
            resumed = self.reader(url)
            resumed.load_state_dict(json.loads(json.dumps(state)))
            self.assertEqual(digests(resumed), local[7:], url)
        # A state saved on the local copy resumes on the remote one, and back.
        r = shardpack.Reader(S.local, **READER)
        digests(r, 11)
        resumed = self.reader(S.s3_url)
        resumed.load_state_dict(r.state_dict())
        self.assertEqual(digests(resumed), local[11:])


    def test_elastic_resume_onto_another_world_size_is_the_local_one(self):
        # Two ranks read 5 batches each and save; three ranks resume. Each new
        # rank's rest of the epoch from the remote dataset is the one from the
        # local copy, batch for batch.
        two = dict(READER, world_size=2)
        saved = self.reader(S.https_url, **two)
        digests(saved, 5)
        state = json.loads(json.dumps(saved.state_dict()))
        for rank in range(3):
            three = dict(READER, world_size=3, rank=rank)
            local = shardpack.Reader(S.local, **three)
            local.load_state_dict(state)
            remote = self.reader(S.https_url, **three)
            remote.load_state_dict(state)
            self.assertEqual(digests(remote), digests(local), rank)


class TwoCachesTest(RemoteTest):
    """Two readers of one URL with two caches, open together in one process:
    each reads through its own cache and counts its own requests, whatever
    thread opens a shard (an LMDB shard is opened by the loader thread, long
    after the reader's open returned)."""

    @classmethod
    def setUpClass(cls):
        cls.lmdb_local = os.path.join(S.tmp, "lmdb")
        subprocess.run([os.environ["SHARDPACK_TOOL"], "convert", S.local, "-o", cls.lmdb_local,
                        "--format", "lmdb", "-q"], check=True, timeout=300)
        S.s3.upload(BUCKET, "lmdb", cls.lmdb_local)
        cls.lmdb_url = f"s3://{BUCKET}/lmdb/"

    def check_two_caches(self, url, local, whole_objects):
        want = digests(shardpack.Reader(local, **READER))
        with open(os.path.join(local, "manifest.json")) as f:
            shard_bytes = sorted(s["bytes"] for s in json.load(f)["shards"])
        first, second = S.cache_dir(), S.cache_dir()
        a = self.reader(url, first)
        b = self.reader(url, second)  # open before a reads anything
        self.assertEqual(digests(a), want)
        self.assertEqual(digests(b), want)
        for cache, r in ((first, a), (second, b)):
            remote = r.stats()["remote"]
            # Each reader fetched the shards' bytes itself (a `.shard` file's
            # blocks, not all of its ends; an LMDB file whole), into its cache.
            least = sum(shard_bytes) if whole_objects else sum(shard_bytes) // 2
            self.assertGreaterEqual(remote["bytes"], least, cache)
            self.assertGreater(remote["cache_misses"], 0, cache)
            self.assertGreater(remote["cache_kept"], 0, cache)
            self.assertGreaterEqual(dir_bytes(cache), sum(shard_bytes) if whole_objects else 1)
            if whole_objects:
                # An LMDB shard is kept whole: one file of its size each.
                kept = sorted(n for _, n in dir_files(cache) if n in shard_bytes)
                self.assertEqual(kept, shard_bytes, cache)
        del a, b

    def test_two_readers_of_one_shard_url_with_two_caches(self):
        self.check_two_caches(S.s3_url, S.local, whole_objects=False)

    def test_two_readers_of_one_lmdb_url_with_two_caches(self):
        self.check_two_caches(self.lmdb_url, self.lmdb_local, whole_objects=True)


class ReplacedDatasetTest(RemoteTest):
    def test_a_dataset_replaced_under_the_same_url_is_read_anew_not_from_the_cache(self):
        other = fixtures.make_cifar_dataset(S.root, 600, name="other", block_size=BLOCK,
                                            shard_records=250, shuffle=False)
        url, cache = f"s3://{BUCKET}/swap/", S.cache_dir()
        S.s3.upload(BUCKET, "swap", S.local)
        first = self.reader(url, cache)
        self.assertEqual(digests(first), self.local_digests())
        state, first_fingerprint = first.state_dict(), first.fingerprint
        # A reader of the same URL and cache opened while this one lives
        # shares its dataset (remote/storage.h, Storage::OpenRemoteDataset): let it go.
        del first
        gc.collect()
        for name in S.files:
            S.s3.delete(BUCKET, "swap/" + name)
        S.s3.upload(BUCKET, "swap", other)
        # Same URL, same cache directory, other bytes: the cache must not
        # hand out the first dataset's blocks.
        second = self.reader(url, cache)
        self.assertEqual(digests(second), digests(shardpack.Reader(other, **READER)))
        self.assertNotEqual(second.fingerprint, first_fingerprint)
        # A state of the first dataset is refused on the second, naming why.
        resumed = self.reader(url, cache)
        with self.assertRaisesRegex(ValueError, "another dataset"):
            resumed.load_state_dict(state)


class FaultTest(RemoteTest):
    """Through tests/remote/fault_proxy.py: in front of moto (the client signs
    for the proxy's host; the proxy keeps Host) or of nginx over TLS."""

    def faulty_rules(self, action, every=4, count=6, first=1):
        # Rule k faults the (first + k*every + 1)-th request for a shard, once.
        return [{"match": ".shard", "skip": first + k * every, "times": 1, "action": action}
                for k in range(count)]

    def test_a_damaged_answer_to_an_opening_read_is_fetched_again(self):
        # A shard's first two requests are its head and its tail (header,
        # footer index, trailer, and the blocks that share their range): one
        # byte flipped in either once must cost a refetch, not the data.
        for skip in (0, 1):
            with self.subTest(skip=skip), servers.FaultProxy(S.s3.endpoint) as proxy, \
                    self.s3_through(proxy):
                proxy.set_rules([{"match": S.shards[0], "skip": skip, "times": 1,
                                  "action": "corrupt"}])
                r = self.reader(S.s3_url)
                try:
                    self.assertEqual(digests(r), self.local_digests())
                    self.assertEqual(len([e for e in proxy.log() if e["action"]]), 1)
                finally:
                    del r
                    gc.collect()

    def test_transient_faults_still_give_the_local_batches(self):
        for action in ("status:503", "status:500", "status:429", "reset", "cut:100", "corrupt",
                       "short:10", "delay:0.2"):
            with self.subTest(action=action), servers.FaultProxy(S.s3.endpoint) as proxy, \
                    self.s3_through(proxy):
                # A damaged answer is fetched once more, then is damage: one
                # fault of those (on a block, past the opening reads), lest
                # the second try meet another.
                once = action in ("corrupt", "short:10")
                proxy.set_rules(self.faulty_rules(action, count=1, first=12) if once
                                else self.faulty_rules(action))
                r = self.reader(S.s3_url)
                try:
                    self.assertEqual(digests(r), self.local_digests())
                    faulted = [e for e in proxy.log() if e["action"] == action]
                    self.assertGreater(len(faulted), 0, proxy.log())
                    remote = r.stats()["remote"]
                    retries = remote["retries"] + remote["refetched"]
                    if action == "reset":
                        # libcurl itself sends again, uncounted, a request whose
                        # kept-alive connection was closed before any answer.
                        self.assertGreater(retries, 0)
                    elif not action.startswith("delay"):
                        self.assertGreaterEqual(retries, len(faulted))
                finally:
                    # The next action's reader must open its own dataset (see
                    # test_two_live_readers_of_one_url_each_use_their_own_cache_dir).
                    del r
                    gc.collect()

    def test_faults_over_tls_through_a_proxy_in_front_of_nginx(self):
        with servers.FaultProxy(S.nginx.url, tls=S.nginx.cert) as proxy:
            proxy.set_rules(self.faulty_rules("reset") + self.faulty_rules("status:503", 3))
            r = self.reader(proxy.url + "ds/")
            self.assertEqual(digests(r), self.local_digests())
            self.assertGreater(r.stats()["remote"]["retries"], 0)

    def test_a_block_corrupt_on_every_try_is_damage_naming_its_url(self):
        shard = S.shards[1]
        with servers.FaultProxy(S.s3.endpoint) as proxy, self.s3_through(proxy):
            # The first two requests (its footer and index at open) pass; every
            # later answer for the shard, retries included, has a byte flipped.
            proxy.set_rules([{"match": shard, "skip": 2, "action": "corrupt"}])
            with self.assertRaises(Exception) as e:
                digests(self.reader(S.s3_url, on_corrupt="error"))
            self.assertIn(S.s3_url + shard, str(e.exception))
            # on_corrupt="skip": the damaged samples are replaced and counted.
            proxy.set_rules([{"match": shard, "skip": 2, "action": "corrupt"}])
            r = self.reader(S.s3_url, on_corrupt="skip")
            got = digests(r)
            self.assertEqual(len(got), len(self.local_digests()))
            self.assertGreater(r.stats()["skipped"], 0)
            self.assertNotEqual(got, self.local_digests())

    def test_a_record_of_a_block_corrupt_on_every_try_is_data_loss_everywhere(self):
        # Dataset(URL)[i] reads a record's bytes of a block (RecordReader);
        # sharddump extract reads records too: neither may hand out bytes of
        # a block that failed its check on both fetches.
        shard = S.shards[1]
        record = SHARD_RECORDS + 5  # within the second shard
        with servers.FaultProxy(S.s3.endpoint) as proxy, self.s3_through(proxy):
            proxy.set_rules([{"match": shard, "skip": 2, "action": "corrupt"}])
            ds = shardpack.Dataset(S.s3_url, cache_dir=S.cache_dir(), cache_bytes=1 << 30)
            with self.assertRaises(shardpack.DataLossError) as e:
                ds[record]
            self.assertIn(S.s3_url + shard, str(e.exception))
            proxy.set_rules([{"match": shard, "skip": 2, "action": "corrupt"}])
            out = os.path.join(S.cache_dir(), "out")
            p = subprocess.run([os.environ["SHARDDUMP_TOOL"], "extract", S.s3_url, "--index",
                                str(record), "-o", out], capture_output=True, text=True,
                               env={**os.environ, "SHARDPACK_CACHE_DIR": S.cache_dir()},
                               timeout=300)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(S.s3_url + shard, p.stderr)

    def test_an_expired_token_is_an_error_naming_the_url(self):
        with servers.FaultProxy(S.s3.endpoint) as proxy, self.s3_through(proxy):
            proxy.set_rules([{"action": "status:403:ExpiredToken"}])
            with self.assertRaises(Exception) as e:
                digests(self.reader(S.s3_url))
            self.assertIn(S.s3_url, str(e.exception))
            self.assertIn("ExpiredToken", str(e.exception))

    def test_a_missing_object_is_an_error_naming_its_url(self):
        S.s3.upload(BUCKET, "holed", S.local)
        S.s3.delete(BUCKET, "holed/" + S.shards[2])
        url = f"s3://{BUCKET}/holed/"
        with self.assertRaises(Exception) as e:
            digests(self.reader(url))
        self.assertIn(url + S.shards[2], str(e.exception))
        with self.assertRaises(Exception) as e:
            digests(self.reader(f"s3://{BUCKET}/no-such-dataset/"))
        self.assertIn(f"s3://{BUCKET}/no-such-dataset/", str(e.exception))
        with self.assertRaises(Exception) as e:
            digests(self.reader(S.nginx.url + "nothing-here/"))
        self.assertIn(S.nginx.url + "nothing-here/", str(e.exception))


class CliTest(RemoteTest):
    def run_tool(self, env_var, *args, env=None, check=True):
        p = subprocess.run([os.environ[env_var], *args], capture_output=True, text=True,
                           env={**os.environ, **(env or {})}, timeout=300)
        if check:
            self.assertEqual(p.returncode, 0, f"{args}: {p.stderr}")
        return p

    def test_sharddump_ls_and_verify_on_urls_match_the_local_dataset(self):
        local = self.run_tool("SHARDDUMP_TOOL", "ls", S.local).stdout
        self.assertGreater(len(local.splitlines()), RECORDS - 1)
        for url in (S.s3_url, S.https_url):
            self.assertEqual(self.run_tool("SHARDDUMP_TOOL", "ls", url).stdout, local, url)
            self.run_tool("SHARDDUMP_TOOL", "verify", url)

    def test_sharddump_verify_reports_a_damaged_remote_shard(self):
        with servers.FaultProxy(S.s3.endpoint) as proxy, self.s3_through(proxy):
            proxy.set_rules([{"match": S.shards[0], "action": "corrupt"}])
            p = self.run_tool("SHARDDUMP_TOOL", "verify", S.s3_url, check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(S.shards[0], p.stdout + p.stderr)

    def test_a_view_in_any_folder_naming_a_url_reads_it(self):
        # A URL in a view is absolute: never joined to the view's folder,
        # wherever the view file is and whatever the working directory.
        local = self.run_tool("SHARDDUMP_TOOL", "ls", S.local).stdout
        folder = os.path.join(S.tmp, "views", "deeper")
        os.makedirs(folder, exist_ok=True)
        for name, url in (("s3", S.s3_url), ("https", S.https_url)):
            view = os.path.join(folder, f"{name}.json")
            with open(view, "w") as f:
                json.dump({"shardpack_view": 1, "datasets": [url]}, f)
            for path, cwd in ((view, S.tmp), (os.path.relpath(view, S.tmp), S.tmp),
                              (view, HERE)):
                p = subprocess.run([os.environ["SHARDDUMP_TOOL"], "ls", path], cwd=cwd,
                                   capture_output=True, text=True, timeout=300,
                                   env={**os.environ, "SHARDPACK_CACHE_DIR": S.cache_dir()})
                self.assertEqual(p.returncode, 0, (path, cwd, p.stderr))
                self.assertEqual(len(p.stdout.splitlines()), len(local.splitlines()), path)

    def bench(self, path, *flags, env=None):
        p = self.run_tool("SHARDBENCH_TOOL", path, "--batch-size", "32", "--seed", "5",
                          "--threads", "2", "--transform", "cifar-train", "--epochs", "2",
                          "--json", "-q", *flags, env=env)
        return json.loads(p.stdout)

    def test_shardbench_on_urls_folds_the_batches_of_the_local_dataset(self):
        local = self.bench(S.local)
        for url in (S.s3_url, S.https_url):
            for budget in (1 << 40, S.dataset_bytes // 10):
                cache = S.cache_dir()
                got = self.bench(url, "--cache-dir", cache, "--cache-bytes", str(budget))
                self.assertEqual((got["xor_fold"], got["samples"]),
                                 (local["xor_fold"], local["samples"]), (url, budget))
                self.assertGreater(dir_bytes(cache), 0)

    def test_the_cache_environment_variables_are_honoured(self):
        cache = S.cache_dir()
        local = self.bench(S.local)
        got = self.bench(S.https_url, env={"SHARDPACK_CACHE_DIR": cache,
                                           "SHARDPACK_CACHE_BYTES": str(S.dataset_bytes // 10)})
        self.assertEqual(got["xor_fold"], local["xor_fold"])
        self.assertGreater(dir_bytes(cache), 0)
        self.assertLessEqual(dir_bytes(cache), S.dataset_bytes // 10 + S.block_bytes)
        self.run_tool("SHARDDUMP_TOOL", "verify", S.s3_url,
                      env={"SHARDPACK_CACHE_DIR": cache})

    def test_shardpack_convert_from_a_url_writes_the_local_conversion(self):
        out = os.path.join(S.tmp, "converted")
        self.run_tool("SHARDPACK_TOOL", "convert", S.local, "-o", out + "-local",
                      "--format", "shard", "--block-size", BLOCK)
        for name, url in (("s3", S.s3_url), ("https", S.https_url)):
            # convert takes its cache from the environment (docs/cli.md, PATH).
            self.run_tool("SHARDPACK_TOOL", "convert", url, "-o", f"{out}-{name}",
                          "--format", "shard", "--block-size", BLOCK,
                          env={"SHARDPACK_CACHE_DIR": S.cache_dir()})
            for shard in S.shards:
                with open(os.path.join(f"{out}-{name}", shard), "rb") as a, \
                        open(os.path.join(out + "-local", shard), "rb") as b:
                    self.assertEqual(a.read(), b.read(), (name, shard))
            r = shardpack.Reader(f"{out}-{name}", **READER)
            self.assertEqual(digests(r), self.local_digests(), name)


class WebDatasetTest(RemoteTest):
    """`shardpack webdataset` on tars in an object store (s3:// and https://,
    a brace range of URLs) writes the shards it writes from the same tars on
    disk; a tar cut short or missing is an error naming its URL."""

    @classmethod
    def setUpClass(cls):
        import tarfile
        cls.dir = os.path.join(S.root, "wds")
        os.makedirs(cls.dir, exist_ok=True)

        def add(tar, name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        for t in range(2):
            with tarfile.open(os.path.join(cls.dir, f"{t:04d}.tar"), "w") as tar:
                for i in range(40 * t, 40 * t + 40):
                    add(tar, f"s/{i:05d}.txt", f"caption {i}: café".encode())
                    add(tar, f"s/{i:05d}.cls", str(i % 7).encode())
                    add(tar, f"s/{i:05d}.bin", bytes((i * 31 + k) % 251 for k in range(3000 + i)))
        with open(os.path.join(cls.dir, "0000.tar"), "rb") as f:
            whole = f.read()
        with open(os.path.join(cls.dir, "cut.tar"), "wb") as f:
            f.write(whole[:len(whole) // 2 + 100])
        S.s3.upload(BUCKET, "wds", cls.dir)
        cls.local = os.path.join(S.tmp, "wds-local")
        cls.pack(os.path.join(cls.dir, "{0000..0001}.tar"), cls.local)

    @staticmethod
    def pack(tars, out, ok=True):
        p = subprocess.run([os.environ["SHARDPACK_TOOL"], "webdataset", tars, "-o", out,
                            "--shard-records", "30", "-q"], capture_output=True, text=True,
                           timeout=120)
        if ok:
            assert p.returncode == 0, p.stderr
        return p

    def test_tars_at_urls_pack_as_the_same_tars_on_disk(self):
        for name, url in (("s3", f"s3://{BUCKET}/wds/"), ("https", S.nginx.url + "wds/")):
            out = os.path.join(S.tmp, f"wds-{name}")
            self.pack(url + "{0000..0001}.tar", out)
            shards = sorted(f for f in os.listdir(self.local) if f.endswith(".shard"))
            self.assertGreater(len(shards), 1)
            self.assertEqual(shards, sorted(f for f in os.listdir(out) if f.endswith(".shard")))
            for shard in shards:
                with open(os.path.join(out, shard), "rb") as a, \
                        open(os.path.join(self.local, shard), "rb") as b:
                    self.assertEqual(a.read(), b.read(), (name, shard))
            ds = shardpack.Dataset(out)
            self.assertEqual(len(ds), 80)
            self.assertEqual(ds[57]["txt"], "caption 57: café")

    def test_a_tar_cut_short_or_missing_at_a_url_is_named(self):
        for url in (f"s3://{BUCKET}/wds/", S.nginx.url + "wds/"):
            out = os.path.join(S.tmp, "wds-bad")
            p = self.pack(url + "cut.tar", out, ok=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(url + "cut.tar @", p.stderr)
            self.assertFalse(os.path.exists(out))
            p = self.pack(url + "{0000..0002}.tar", out, ok=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(url + "0002.tar", p.stderr)
            self.assertFalse(os.path.exists(out))


class SecretTest(RemoteTest):
    """A password, a presigned signature or a token in a URL, in the endpoint
    or in the credentials never reaches a message (common/redact.h): not a
    tool's stdout or stderr, not a Python exception, not the stats."""

    SECRET = "SECRET"

    def urls(self):
        host = S.nginx.url.split("://", 1)[1]  # "127.0.0.1:PORT/"
        dead = f"127.0.0.1:{servers.free_port()}/"
        return [
            f"https://user:{self.SECRET}pw@{host}ds/",            # userinfo, a live server
            f"https://user:{self.SECRET}pw@{host}nothing-here/",  # userinfo, a 404
            f"http://user:{self.SECRET}pw@{dead}ds/",             # userinfo, nothing listening
            f"https://user:{self.SECRET}/pw@{host}ds/",           # a password holding '/'
            S.https_url + f"?X-Amz-Signature={self.SECRET}sig&X-Amz-Credential=AKID%2F{self.SECRET}",
            S.https_url + f"#{self.SECRET}frag",
            S.s3_url + f"?X-Amz-Security-Token={self.SECRET}tok",
            f"HTTPS://user:{self.SECRET}pw@{host}ds/",            # a scheme in capitals
            S.https_url + f"manifest.json?{self.SECRET}",
        ]

    def run_all(self, url, env=None):
        """Every way in on `url`: (what, text shown) for each, each failing."""
        run_env = dict(os.environ, SHARDPACK_REMOTE_DEADLINE_S="2", **(env or {}))
        for k in [k for k, v in run_env.items() if v is None]:
            del run_env[k]
        out = os.path.join(S.tmp, "secret-out")
        cache = S.cache_dir()
        commands = {
            "sharddump info": [os.environ["SHARDDUMP_TOOL"], "info", url],
            "sharddump ls": [os.environ["SHARDDUMP_TOOL"], "ls", url],
            "shardpack convert": [os.environ["SHARDPACK_TOOL"], "convert", url, "-o", out,
                                  "--format", "lmdb"],
            "shardbench": [os.environ["SHARDBENCH_TOOL"], url, "--cache-dir", cache, "-q"],
        }
        for what, argv in commands.items():
            p = subprocess.run(argv, capture_output=True, text=True, env=run_env, timeout=120)
            self.assertEqual(p.returncode, 1, f"{what} {url}: {p.stdout} {p.stderr}")
            yield what, p.stdout + p.stderr
        saved = {k: os.environ.get(k) for k in run_env.keys() | os.environ.keys()}
        os.environ.clear()
        os.environ.update(run_env)
        try:
            for what, open_it in (
                    ("shardpack.Reader", lambda: digests(self.reader(url, cache))),
                    ("shardpack.Dataset", lambda: shardpack.Dataset(url, cache_dir=cache)[0])):
                with self.assertRaises(Exception) as e:
                    open_it()
                yield what, f"{type(e.exception).__name__}: {e.exception!s} {e.exception!r}"
        finally:
            os.environ.clear()
            os.environ.update({k: v for k, v in saved.items() if v is not None})

    def assertNoSecret(self, url, env=None, secrets=(SECRET,)):
        for what, text in self.run_all(url, env):
            for secret in secrets:
                self.assertNotIn(secret, text, f"{what} on {url}")
            self.assertTrue(text.strip(), f"{what} on {url}: no message")

    def test_a_secret_in_the_url_is_in_no_message(self):
        for url in self.urls():
            with self.subTest(url=url):
                self.assertNoSecret(url)

    def test_a_secret_in_the_endpoint_is_in_no_message(self):
        endpoint = S.s3.endpoint.replace("://", f"://minio:{self.SECRET}pw@")
        self.assertNoSecret(S.s3_url, {"AWS_ENDPOINT_URL": endpoint + f"/?sig={self.SECRET}"})
        config = os.path.join(S.tmp, "secret-aws-config")
        with open(config, "w") as f:
            f.write(f"[default]\nendpoint_url = {endpoint}#{self.SECRET}\n")
        self.assertNoSecret(S.s3_url, {"AWS_CONFIG_FILE": config, "AWS_ENDPOINT_URL": None})

    def test_the_secret_key_and_token_are_in_no_message(self):
        dead = f"http://127.0.0.1:{servers.free_port()}"
        env = {"AWS_SECRET_ACCESS_KEY": f"{self.SECRET}key", "AWS_SESSION_TOKEN": f"{self.SECRET}tok",
               "AWS_ENDPOINT_URL": dead}
        self.assertNoSecret(S.s3_url, env)
        with servers.FaultProxy(S.s3.endpoint) as proxy:
            proxy.set_rules([{"action": "status:403:ExpiredToken"}])
            self.assertNoSecret(S.s3_url, dict(env, AWS_ENDPOINT_URL=proxy.endpoint))


def main():
    global S
    with contextlib.ExitStack() as stack:
        S = Setup(stack)
        reason = unsupported()
        if reason:
            print(f"SKIP: {reason}", flush=True)
            code = servers.SKIP
        else:
            result = unittest.main(exit=False).result
            code = 0 if result.wasSuccessful() else 1
    sys.exit(code)


if __name__ == "__main__":
    main()
