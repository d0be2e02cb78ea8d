"""Real servers on loopback for the remote tests and bench/remote_bench.py.

Standard library only, so that tests run by /usr/bin/python3 import it:

  Nginx(root, tls=True)        Debian's nginx serving the files under root, with
                               range requests and keep-alive, over HTTPS with a
                               self-signed certificate (.ca_file) or plain HTTP;
                               .url, .requests() parses its access log
  MotoS3()                     moto's S3 server (build/venv-remote, made by
                               scripts/python-env from tests/remote/requirements.txt);
                               .endpoint, .env(), .upload(bucket, prefix, local_dir)
  FaultProxy(origin, rules)    tests/remote/fault_proxy.py in front of a URL or
                               serving a directory; .url, .set_rules(), .log()

Each is a context manager: the server runs from __enter__ to __exit__, on a
free port of 127.0.0.1. What a machine lacks (nginx, the venv, the proxy)
is told by missing_nginx() / missing_moto() / missing_fault_proxy() (None
when present, else the reason) and require(...) exits with SKIP (77, ctest's
SKIP_RETURN_CODE) printing the reason.
"""
import hashlib
import hmac
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FAULT_PROXY = os.path.join(HERE, "fault_proxy.py")
START_TIMEOUT_S = 30


def nginx_binary():
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)


def remote_venv_python():
    """The venv's python that runs moto: $SHARDPACK_REMOTE_VENV or build/venv-remote."""
    venv = os.environ.get("SHARDPACK_REMOTE_VENV") or os.path.join(REPO, "build", "venv-remote")
    return os.path.join(venv, "bin", "python")


def missing_nginx():
    if nginx_binary() is None:
        return "no nginx on PATH or in /usr/sbin (scripts/setup installs Debian's nginx)"
    if shutil.which("openssl") is None:
        return "no openssl for the test certificate"
    return None


def missing_moto():
    python = remote_venv_python()
    if not os.access(python, os.X_OK):
        return (f"no {python}: make it with scripts/python-env --requirements "
                "tests/remote/requirements.txt --venv build/venv-remote (scripts/test does)")
    return None


def missing_fault_proxy():
    if not os.path.exists(FAULT_PROXY):
        return f"no {FAULT_PROXY}"
    return None


def require(*reasons):
    """Exits with SKIP, printing the first reason that is not None."""
    for reason in reasons:
        if reason:
            print(f"SKIP: {reason}", flush=True)
            sys.exit(SKIP)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc, what, log_file=None):
    """Waits until 127.0.0.1:port accepts a connection; raises naming `what`
    (with its log's tail) when the process exits first or time runs out."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} before serving"
                               f"{_tail(log_file)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {START_TIMEOUT_S} s"
                       f"{_tail(log_file)}")


def _tail(path):
    if not path or not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        return ":\n" + "".join(f.readlines()[-20:])


def stop(proc):
    if proc and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_on_free_port(launch, what, log_file, tmp):
    """(port, process) of launch(port) once it listens, on a port found free;
    another port when that one was taken meanwhile. On failure cleans tmp up."""
    for attempt in range(5):
        port = free_port()
        proc = launch(port)
        try:
            wait_for_port(port, proc, what, log_file)
            return port, proc
        except RuntimeError:
            stop(proc)
            if attempt == 4:
                tmp.cleanup()
                raise


class TlsCert:
    """A self-signed certificate for 127.0.0.1 and localhost in dir: .cert
    (also the CA file clients trust) and .key."""

    def __init__(self, dir):
        self.cert = os.path.join(dir, "cert.pem")
        self.key = os.path.join(dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-keyout", self.key, "-out", self.cert, "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       check=True, capture_output=True)

    def client_context(self):
        return ssl.create_default_context(cafile=self.cert)


NGINX_CONF = """\
{user}worker_processes {workers};
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format shardpack '$request_method $uri $status $body_bytes_sent '
                         '"$http_range" $connection $connection_requests';
    access_log {prefix}/access.log shardpack;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port}{ssl};
        server_name localhost;
{tls}        root {root};
        location / {{ }}
    }}
}}
"""


class Nginx:
    """Debian's nginx serving the files under `root` on a free loopback port:
    GET and HEAD with Range (206, 416), keep-alive. .url ends in '/'; with
    tls, .ca_file is the certificate to trust. Its own prefix, config and logs
    in a temporary directory: never the system's nginx or port 80. `workers`:
    nginx's worker processes (a number or "auto": one a core)."""

    def __init__(self, root, tls=True, workers=1):
        self.root = os.path.abspath(root)
        self.tls = tls
        self.workers = workers
        self.proc = None
        self.ca_file = None

    def __enter__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="shardpack-nginx-")
        prefix = self._tmp.name
        os.makedirs(os.path.join(prefix, "tmp"))
        if self.tls:
            self.cert = TlsCert(prefix)
            self.ca_file = self.cert.cert
        self.access_log = os.path.join(prefix, "access.log")
        conf = os.path.join(prefix, "nginx.conf")

        def launch(port):
            self.port = port
            with open(conf, "w") as f:
                f.write(self._conf(prefix))
            return subprocess.Popen(
                [nginx_binary(), "-p", prefix, "-c", conf, "-e", os.path.join(prefix, "error.log"),
                 "-g", "daemon off;"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT)
        self.port, self.proc = start_on_free_port(launch, "nginx",
                                                  os.path.join(prefix, "error.log"), self._tmp)
        scheme = "https" if self.tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}/"
        return self

    def _conf(self, prefix):
        tls = ""
        if self.tls:
            tls = (f"        ssl_certificate {self.cert.cert};\n"
                   f"        ssl_certificate_key {self.cert.key};\n")
        # Run as root, nginx's workers would drop to nobody, who may not
        # read a test's private temporary directory.
        user = "user root;\n" if os.geteuid() == 0 else ""
        return NGINX_CONF.format(user=user, workers=self.workers, prefix=prefix, port=self.port,
                                 root=self.root, ssl=" ssl" if self.tls else "", tls=tls)

    def __exit__(self, *exc):
        stop(self.proc)
        self._tmp.cleanup()

    def requests(self):
        """The access log so far: a list of dicts method, path, status, bytes,
        range (None when none), conn (nginx's connection serial number)."""
        self._settle()
        entries = []
        with open(self.access_log) as f:
            for line in f:
                method, path, status, sent, rng, conn, _ = line.split(" ")
                rng = rng.strip('"')
                entries.append({"method": method, "path": path, "status": int(status),
                                "bytes": int(sent), "range": None if rng == "-" else rng,
                                "conn": int(conn)})
        return entries

    def _settle(self):
        # nginx logs a request just after its last byte is sent: wait until
        # the log stops growing, so that a client's last request is in it.
        size, deadline = -1, time.monotonic() + 2
        while time.monotonic() < deadline:
            now = os.path.getsize(self.access_log)
            if now == size:
                return
            size = now
            time.sleep(0.05)

    def clear_requests(self):
        open(self.access_log, "w").close()  # nginx appends: the next line starts the file

    def get(self, path, headers=None):
        """(status, headers, body) of a GET of `path` (relative to .url)."""
        return http_get(self.url + path.lstrip("/"), headers,
                        self.cert.client_context() if self.tls else None)


def http_get(url, headers=None, context=None):
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


class MotoS3:
    """moto's S3 server (in memory) on a free loopback port: .endpoint is its
    URL (no trailing '/'); env() the AWS variables a client needs to reach
    it. Buckets are path-style: endpoint/bucket/key."""

    ACCESS_KEY = "testing"
    SECRET_KEY = "testing"
    REGION = "us-east-1"

    def __enter__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="shardpack-moto-")
        log = os.path.join(self._tmp.name, "moto.log")

        def launch(port):
            with open(log, "w") as out:  # the child keeps its own copy
                return subprocess.Popen(
                    [remote_venv_python(), "-m", "moto.server", "-H", "127.0.0.1",
                     "-p", str(port)], stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT)
        self.port, self.proc = start_on_free_port(launch, "moto.server", log, self._tmp)
        self.endpoint = f"http://127.0.0.1:{self.port}"
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _wait_ready(self):
        # The port accepts before the app answers: wait for a real S3 answer.
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                status, _, _ = http_get(self.endpoint + "/")
                if status == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"moto.server on {self.endpoint} did not answer GET /")
            time.sleep(0.1)

    def __exit__(self, *exc):
        stop(self.proc)
        self._tmp.cleanup()

    def env(self, endpoint=None):
        """The environment a client of this server (or of a proxy in front of
        it: `endpoint`) needs: endpoint, test credentials, region."""
        return {"AWS_ENDPOINT_URL": endpoint or self.endpoint,
                "AWS_ACCESS_KEY_ID": self.ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": self.SECRET_KEY,
                "AWS_REGION": self.REGION, "AWS_DEFAULT_REGION": self.REGION}

    def _request(self, method, path, body=None, headers=None):
        """(status, headers, body) of a SigV4-signed request (moto answers an
        unsigned GET as an anonymous one: 403)."""
        url = self.endpoint + "/" + urllib.parse.quote(path)
        signed = sign_v4(method, url, body or b"", self.ACCESS_KEY, self.SECRET_KEY, self.REGION)
        signed.update(headers or {})
        request = urllib.request.Request(url, data=body, method=method, headers=signed)
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def _must(self, method, path, body=None):
        status, _, data = self._request(method, path, body)
        if status // 100 != 2:
            raise RuntimeError(f"moto: {method} {path}: HTTP {status}: {data[:300]!r}")

    def create_bucket(self, bucket):
        self._must("PUT", bucket, b"")

    def put(self, bucket, key, data):
        self._must("PUT", f"{bucket}/{key}", data)

    def delete(self, bucket, key):
        self._must("DELETE", f"{bucket}/{key}")

    def upload(self, bucket, prefix, local_dir):
        """Creates `bucket` (if new) and puts every file under local_dir as
        prefix/<relative path>, by plain unsigned PUTs (moto checks no
        signature). Returns the keys."""
        self.create_bucket(bucket)
        keys = []
        for dirpath, _, files in os.walk(local_dir):
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, local_dir).replace(os.sep, "/")
                key = f"{prefix.strip('/')}/{rel}" if prefix.strip("/") else rel
                with open(path, "rb") as f:
                    self.put(bucket, key, f.read())
                keys.append(key)
        return keys

    def get(self, bucket, key, headers=None):
        """(status, headers, body) of a signed GET."""
        return self._request("GET", f"{bucket}/{key}", None, headers)


def sign_v4(method, url, body, access_key, secret_key, region, service="s3"):
    """The headers of an AWS Signature Version 4 request (Host,
    X-Amz-Date, X-Amz-Content-Sha256, Authorization), for the test servers."""
    parts = urllib.parse.urlsplit(url)
    now = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    payload = hashlib.sha256(body).hexdigest()
    headers = {"host": parts.netloc, "x-amz-content-sha256": payload, "x-amz-date": now}
    names = ";".join(sorted(headers))
    query = "&".join(sorted(q for q in parts.query.split("&") if q))
    canonical = "\n".join([method, parts.path or "/", query,
                           "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)),
                           names, payload])
    scope = f"{now[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", now, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret_key).encode()
    for part in (now[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return {"Host": parts.netloc, "X-Amz-Date": now, "X-Amz-Content-Sha256": payload,
            "Content-Type": "application/octet-stream",
            "Authorization": f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
                             f"SignedHeaders={names}, Signature={signature}"}


class FaultProxy:
    """tests/remote/fault_proxy.py on a free loopback port, in front of
    `origin` (a URL: every request forwarded, headers and all) or serving a
    directory itself (a path). `rules`: the initial fault rules (the proxy's
    docstring has their form). With `tls` (a TlsCert) it speaks HTTPS."""

    def __init__(self, origin, rules=None, tls=None):
        self.origin = origin
        self.rules = rules or []
        self.tls = tls

    def __enter__(self):
        source = (["--upstream", self.origin] if "://" in self.origin
                  else ["--serve", os.path.abspath(self.origin)])
        tls = ["--tls-cert", self.tls.cert, "--tls-key", self.tls.key] if self.tls else []
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, FAULT_PROXY, *source, *tls],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._stderr, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            stop(self.proc)
            self._stderr.seek(0)
            raise RuntimeError(f"fault_proxy.py did not start: {line!r} "
                               f"{self._stderr.read().decode(errors='replace')}")
        self.port = int(line.split()[-1])
        self.url = f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/"
        self.endpoint = self.url.rstrip("/")
        self.set_rules(self.rules)
        return self

    def __exit__(self, *exc):
        stop(self.proc)
        self.proc.stdout.close()
        self._stderr.close()

    def _control(self, method, path, body=None):
        request = urllib.request.Request(self.url + path, data=body, method=method)
        context = self.tls.client_context() if self.tls else None
        with urllib.request.urlopen(request, context=context, timeout=30) as r:
            return r.read()

    def set_rules(self, rules):
        """Replaces the fault rules (a list of dicts)."""
        self._control("PUT", "__faults", json.dumps(rules).encode())

    def log(self):
        """One dict per request served: method, path, range, status, action, bytes."""
        return json.loads(self._control("GET", "__log"))

    def clear_log(self):
        self._control("DELETE", "__log")
