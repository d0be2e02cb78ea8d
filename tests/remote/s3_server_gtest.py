#!/usr/bin/env python3
"""Runs the client's tests that need a real S3 server (http_store_test's
S3Server.*) against moto's S3 server on loopback (tests/remote/servers.py):
the bucket moto-bkt holds "pre fix/obj", 1 MiB of bytes i % 256, and
SHARDPACK_TEST_S3_ENDPOINT names the server. Exits 77 (skip) with the reason
when the venv that runs moto is missing.

  s3_server_gtest.py BUILD/tests/remote/http_store_test
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import servers  # noqa: E402


def main():
    servers.require(servers.missing_moto())
    with servers.MotoS3() as s3:
        s3.create_bucket("moto-bkt")
        s3.put("moto-bkt", "pre fix/obj", bytes(i % 256 for i in range(1 << 20)))
        env = dict(os.environ, SHARDPACK_TEST_S3_ENDPOINT=s3.endpoint)
        run = subprocess.run([sys.argv[1], "--gtest_filter=S3Server.*"], env=env,
                             capture_output=True, text=True)
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
        if run.returncode == 0 and "[  SKIPPED ]" in run.stdout:
            sys.exit("s3_server_gtest: the test skipped with a server running")
        return run.returncode


if __name__ == "__main__":
    sys.exit(main())
