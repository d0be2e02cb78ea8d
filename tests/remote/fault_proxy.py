#!/usr/bin/env python3
"""An HTTP/1.1 server for tests that injects faults into the answers it gives.

  fault_proxy.py (--upstream URL | --serve DIR) [--port N] [--host H]
                 [--tls-cert CERT --tls-key KEY]

--serve DIR: an origin itself: GET and HEAD of the files under DIR, with
  Range (206 and Content-Range; 416 past the end), 404 when missing.
--upstream URL: forwards every request (method, path, all headers as
  received, Host included, so SigV4 signatures stay valid, and the body) to
  the origin at URL (scheme, host and port) and relays its answer.

Prints "listening on <port>" (one line, flushed) once serving; keep-alive,
one thread per connection. Standard library only.

Control endpoints (never faulted, never logged):
  PUT /__faults   a JSON list of rules; replaces the rules
  GET /__log      a JSON list, one entry per request: method, path, range,
                  status (null when none was sent), action (null when none),
                  bytes (body bytes sent), conn (the connection's number,
                  from 1), auth (the Authorization header's scheme, or null),
                  credential (its Credential=... value, or null)
  DELETE /__log   empties the log

A rule: {"match": "substring of the path" (default: every path), "skip": K
(let the first K matching requests pass, default 0), "times": N (fault the
next N matching, default: all), "action": A}. A request goes down the rules
in order; each rule whose match it meets counts it, and the first that
faults it decides (the rules after that one do not see it). A:
  status:CODE            an answer with that status (e.g. 503, 500, 429)
  status:CODE:S3CODE     the same with an S3 XML error body naming S3CODE
  reset                  close the socket without an answer (TCP reset)
  cut:N                  full headers, N body bytes, then close
  short:N                a complete answer, body and Content-Length N short
  corrupt                one byte of the body flipped
  delay:S                wait S seconds, then answer
  stall:S                headers, then S seconds of silence, then the body
"""
import argparse
import http.client
import http.server
import json
import os
import re
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse

ACTION = re.compile(r'^(status:\d{3}(:\w+)?|reset|cut:\d+|short:\d+|corrupt|'
                    r'delay:\d+(\.\d+)?|stall:\d+(\.\d+)?)$')
HOP_BY_HOP = {'connection', 'keep-alive', 'transfer-encoding', 'content-length',
              'proxy-connection', 'upgrade', 'te', 'trailer'}


class State:
    """The rules, the log and the connection counter, shared by all threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []
        self.log = []
        self.connections = 0

    def set_rules(self, rules):
        if not isinstance(rules, list):
            raise ValueError('the rules must be a JSON list')
        checked = []
        for rule in rules:
            if not isinstance(rule, dict) or not ACTION.match(str(rule.get('action', ''))):
                raise ValueError(f'bad rule {rule!r}: "action" must be one of status:CODE, '
                                 'status:CODE:S3CODE, reset, cut:N, short:N, corrupt, '
                                 'delay:S, stall:S')
            times = rule.get('times')
            checked.append({'match': str(rule.get('match', '')), 'skip': int(rule.get('skip', 0)),
                            'times': None if times is None else int(times),
                            'action': rule['action'], 'seen': 0})
        with self.lock:
            self.rules = checked

    def action_for(self, path):
        with self.lock:
            for rule in self.rules:
                if rule['match'] not in path:
                    continue
                n = rule['seen']
                rule['seen'] += 1
                times = rule['times']
                if n >= rule['skip'] and (times is None or n < rule['skip'] + times):
                    return rule['action']
            return None

    def record(self, entry):
        with self.lock:
            self.log.append(entry)

    def next_connection(self):
        with self.lock:
            self.connections += 1
            return self.connections


def parse_range(header, size):
    """(first, last) of a "bytes=a-b" header, None for no range, 'bad' past the end."""
    m = re.fullmatch(r'bytes=(\d*)-(\d*)', header.strip()) if header else None
    if not m or (m.group(1) == '' and m.group(2) == ''):
        return None
    if m.group(1) == '':
        n = int(m.group(2))
        return (max(0, size - n), size - 1) if n > 0 and size > 0 else 'bad'
    first = int(m.group(1))
    last = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
    return 'bad' if first >= size or last < first else (first, last)


def s3_error_body(code):
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f'<Message>fault_proxy: {code}</Message></Error>').encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'fault_proxy'

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle's
        # algorithm holds the body until the client's delayed ACK (40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn_id = self.server.state.next_connection()

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.dispatch()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

    def dispatch(self):
        if self.path.startswith('/__'):
            return self.control()
        if self.server.serve_dir is not None:
            status, headers, body = self.from_dir()
        else:
            status, headers, body = self.from_upstream()
        action = self.server.state.action_for(self.path)
        entry = {'method': self.command, 'path': self.path, 'range': self.headers.get('Range'),
                 'status': status, 'action': action, 'bytes': 0, 'conn': self.conn_id}
        entry.update(self.auth_fields())
        # Logged, and its fields set, before the answer goes out: a client
        # that reads the log once answered finds its request there.
        self.server.state.record(entry)
        self.answer(status, headers, body, action, entry)

    def auth_fields(self):
        auth = self.headers.get('Authorization')
        m = re.search(r'Credential=([^,\s]+)', auth or '')
        return {'auth': auth.split()[0] if auth else None, 'credential': m.group(1) if m else None}

    def control(self):
        state = self.server.state
        length = int(self.headers.get('Content-Length') or 0)
        data = self.rfile.read(length) if length else b''
        if self.path == '/__faults' and self.command == 'PUT':
            try:
                state.set_rules(json.loads(data or b'[]'))
            except (ValueError, TypeError) as e:
                return self.send_plain(400, f'{e}\n'.encode())
            return self.send_plain(200, b'ok\n')
        if self.path == '/__log' and self.command == 'GET':
            with state.lock:
                text = json.dumps(state.log)
            return self.send_plain(200, text.encode(), 'application/json')
        if self.path == '/__log' and self.command == 'DELETE':
            with state.lock:
                state.log = []
            return self.send_plain(200, b'ok\n')
        return self.send_plain(404, b'no such control endpoint\n')

    def send_plain(self, status, body, content_type='text/plain'):
        self.send_response(status)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def from_dir(self):
        if self.command not in ('GET', 'HEAD'):
            self.read_request_body()
            return 405, [('Content-Type', 'text/plain')], b'method not allowed\n'
        rel = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip('/')
        path = os.path.join(self.server.serve_dir, rel)
        if '..' in rel.split('/') or not os.path.isfile(path):
            return 404, [('Content-Type', 'text/plain')], b'not found\n'
        size = os.path.getsize(path)
        span = parse_range(self.headers.get('Range'), size)
        if span == 'bad':
            return 416, [('Content-Range', f'bytes */{size}')], b''
        first, last = span if span else (0, size - 1)
        with open(path, 'rb') as f:
            f.seek(first)
            body = f.read(last - first + 1)
        headers = [('Content-Type', 'application/octet-stream'), ('Accept-Ranges', 'bytes')]
        if span is None:
            return 200, headers, body
        return 206, headers + [('Content-Range', f'bytes {first}-{last}/{size}')], body

    def read_request_body(self):
        if self.headers.get('Transfer-Encoding', '').lower() == 'chunked':
            chunks = []
            while True:
                n = int(self.rfile.readline().split(b';')[0], 16)
                chunks.append(self.rfile.read(n))
                self.rfile.readline()
                if n == 0:
                    return b''.join(chunks)
        length = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(length) if length else None

    def upstream_connection(self):
        up = self.server.upstream
        if up.scheme == 'https':
            return http.client.HTTPSConnection(up.hostname, up.port or 443, timeout=60,
                                               context=ssl._create_unverified_context())
        return http.client.HTTPConnection(up.hostname, up.port or 80, timeout=60)

    def from_upstream(self):
        body = self.read_request_body()
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]
        if body is not None:
            headers.append(('Content-Length', str(len(body))))
        # One kept-alive connection to the origin per client connection; a
        # reused one the origin has closed meanwhile is tried again fresh.
        for fresh in (False, True):
            if fresh or getattr(self, 'origin', None) is None:
                self.origin = self.upstream_connection()
            try:
                self.origin.putrequest(self.command, self.path, skip_host=True,
                                       skip_accept_encoding=True)
                for k, v in headers:
                    self.origin.putheader(k, v)
                self.origin.endheaders(body)
                resp = self.origin.getresponse()
                data = resp.read()
                kept = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP]
                return resp.status, kept, data
            except (OSError, http.client.HTTPException) as e:
                self.origin.close()
                self.origin = None
                error = e
        return 502, [('Content-Type', 'text/plain')], f'upstream: {error}\n'.encode()

    def answer(self, status, headers, body, action, entry):
        kind, _, arg = (action or '').partition(':')
        if kind == 'reset':
            entry['status'] = None
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack('ii', 1, 0))
            self.connection.close()  # RST once the handler drops its files, no FIN first
            return
        if kind == 'status':
            code, _, s3code = arg.partition(':')
            status, body = int(code), s3_error_body(s3code) if s3code else b'fault\n'
            headers = [('Content-Type', 'application/xml' if s3code else 'text/plain')]
            entry['status'] = status
        elif kind == 'short':
            body = body[:max(0, len(body) - int(arg))]
        elif kind == 'corrupt' and body:
            body = body[:len(body) // 2] + bytes([body[len(body) // 2] ^ 0x5A]) + \
                body[len(body) // 2 + 1:]
        elif kind == 'delay':
            time.sleep(float(arg))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command == 'HEAD':
            return
        if kind == 'cut':
            self.close_connection = True
            body = body[:int(arg)]
        entry['bytes'] = len(body)
        if kind == 'stall':
            self.wfile.flush()
            time.sleep(float(arg))
        self.wfile.write(body)

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (ConnectionError, ssl.SSLError, socket.timeout, BrokenPipeError):
            self.close_connection = True


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # a client that hangs up mid-answer is expected here


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    origin = p.add_mutually_exclusive_group(required=True)
    origin.add_argument('--upstream', help='forward to the origin at this URL')
    origin.add_argument('--serve', help='serve the files of this directory')
    p.add_argument('--port', type=int, default=0, help='0 (default): any free port')
    p.add_argument('--host', default='127.0.0.1')
    p.add_argument('--tls-cert')
    p.add_argument('--tls-key')
    args = p.parse_args()
    if bool(args.tls_cert) != bool(args.tls_key):
        p.error('--tls-cert and --tls-key go together')
    server = Server((args.host, args.port), Handler)
    server.state = State()
    server.serve_dir = os.path.abspath(args.serve) if args.serve else None
    server.upstream = urllib.parse.urlsplit(args.upstream) if args.upstream else None
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        # The handshake happens in the connection's thread, on its first read.
        server.socket = context.wrap_socket(server.socket, server_side=True,
                                            do_handshake_on_connect=False)
    # One write of the whole line: a reader that closes the pipe once it has
    # the line must not make a second write fail.
    sys.stdout.write(f'listening on {server.server_address[1]}\n')
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    sys.exit(main())
