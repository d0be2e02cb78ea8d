"""tests/remote/servers.py itself: nginx, moto and the fault proxy start on
loopback, take files and give back byte ranges of them.

Run by ctest with /usr/bin/python3 (tests/remote/CMakeLists.txt). Skipped
(exit 77) without nginx or build/venv-remote; the proxy's cases are skipped
until tests/remote/fault_proxy.py is there.
"""
import os
import sys
import tempfile
import unittest
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import servers  # noqa: E402

servers.require(servers.missing_nginx(), servers.missing_moto())

DATA = bytes((i * 7 + i // 251) % 256 for i in range(200_000))


class ServersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="shardpack-servers-")
        cls.root = os.path.join(cls.tmp.name, "root")
        os.makedirs(os.path.join(cls.root, "ds"))
        with open(os.path.join(cls.root, "ds", "a.bin"), "wb") as f:
            f.write(DATA)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_ranges(self, get):
        status, headers, body = get({"Range": "bytes=1000-1999"})
        self.assertEqual(status, 206)
        self.assertEqual(body, DATA[1000:2000])
        self.assertEqual(headers["Content-Range"], f"bytes 1000-1999/{len(DATA)}")
        status, _, body = get({"Range": f"bytes={len(DATA) - 10}-"})
        self.assertEqual((status, body), (206, DATA[-10:]))
        status, _, _ = get({"Range": f"bytes={len(DATA)}-{len(DATA) + 5}"})
        self.assertEqual(status, 416)
        status, _, body = get({})
        self.assertEqual((status, body), (200, DATA))

    def test_nginx_serves_ranges_over_tls_and_logs_each_request(self):
        with servers.Nginx(self.root, tls=True) as nginx:
            self.assertTrue(nginx.url.startswith("https://127.0.0.1:"))
            self.check_ranges(lambda h: nginx.get("ds/a.bin", h))
            status, _, _ = nginx.get("ds/missing.bin")
            self.assertEqual(status, 404)
            log = nginx.requests()
            self.assertEqual([e["status"] for e in log], [206, 206, 416, 200, 404])
            self.assertEqual(log[0], {"method": "GET", "path": "/ds/a.bin", "status": 206,
                                      "bytes": 1000, "range": "bytes=1000-1999",
                                      "conn": log[0]["conn"]})
            nginx.clear_requests()
            nginx.get("ds/a.bin", {"Range": "bytes=0-0"})
            self.assertEqual(len(nginx.requests()), 1)

    def test_nginx_refuses_a_client_that_does_not_trust_its_certificate(self):
        with servers.Nginx(self.root, tls=True) as nginx:
            with self.assertRaises(urllib.error.URLError) as e:
                servers.http_get(nginx.url + "ds/a.bin")
            self.assertIn("CERTIFICATE_VERIFY_FAILED", str(e.exception))

    def test_nginx_keeps_a_connection_alive_across_requests(self):
        import http.client
        with servers.Nginx(self.root, tls=False) as nginx:
            conn = http.client.HTTPConnection("127.0.0.1", nginx.port, timeout=10)
            for first in (0, 100, 200):
                conn.request("GET", "/ds/a.bin", headers={"Range": f"bytes={first}-{first + 9}"})
                self.assertEqual(conn.getresponse().read(), DATA[first:first + 10])
            conn.close()
            conns = {e["conn"] for e in nginx.requests()}
            self.assertEqual(len(conns), 1, nginx.requests())

    def test_moto_takes_an_upload_and_serves_ranges_of_it(self):
        with servers.MotoS3() as s3:
            keys = s3.upload("bucket", "prefix/ds", self.root)
            self.assertEqual(keys, ["prefix/ds/ds/a.bin"])
            self.check_ranges(lambda h: s3.get("bucket", "prefix/ds/ds/a.bin", h))
            status, _, body = s3.get("bucket", "prefix/ds/ds/nothing.bin")
            self.assertEqual(status, 404)
            self.assertIn(b"NoSuchKey", body)
            env = s3.env()
            self.assertEqual(env["AWS_ENDPOINT_URL"], s3.endpoint)
            self.assertEqual(env["AWS_ACCESS_KEY_ID"], "testing")

    @unittest.skipIf(servers.missing_fault_proxy(), servers.missing_fault_proxy())
    def test_the_fault_proxy_forwards_to_moto_and_fails_what_its_rules_say(self):
        with servers.MotoS3() as s3, servers.FaultProxy(s3.endpoint) as proxy:
            s3.upload("bucket2", "", self.root)
            url = proxy.url + "bucket2/ds/a.bin"

            def get(headers=None):
                # Signed for the proxy's host: it forwards Host as received.
                signed = servers.sign_v4("GET", url, b"", "testing", "testing", "us-east-1")
                return servers.http_get(url, {**signed, **(headers or {})})
            status, _, body = get({"Range": "bytes=5-9"})
            self.assertEqual((status, body), (206, DATA[5:10]))
            proxy.set_rules([{"match": "a.bin", "times": 1, "action": "status:503"}])
            self.assertEqual(get()[0], 503)
            self.assertEqual(get()[0], 200)
            self.assertEqual([e["status"] for e in proxy.log()], [206, 503, 200])
            proxy.clear_log()
            self.assertEqual(proxy.log(), [])

    @unittest.skipIf(servers.missing_fault_proxy(), servers.missing_fault_proxy())
    def test_the_fault_proxy_in_front_of_nginx_over_tls(self):
        with servers.Nginx(self.root, tls=True) as nginx, \
                servers.FaultProxy(nginx.url, tls=nginx.cert) as proxy:
            context = nginx.cert.client_context()
            status, _, body = servers.http_get(proxy.url + "ds/a.bin",
                                               {"Range": "bytes=0-99"}, context)
            self.assertEqual((status, body), (206, DATA[:100]))
            self.assertEqual(len(nginx.requests()), 1)


if __name__ == "__main__":
    unittest.main()
