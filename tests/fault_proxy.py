"""An HTTP proxy on 127.0.0.1 in front of an S3 test server that fails chosen requests: it
answers them with an HTTP status (500, 503 SlowDown, ...) or drops the connection, for as
many times as asked, and forwards everything else. Used by the storage error tests."""

from __future__ import annotations

import http.client
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_S3_ERRORS = {500: "InternalError", 503: "SlowDown"}


@dataclass
class Rule:
    method: str  # GET, PUT, POST, HEAD, ...
    path_part: str  # a substring of the request path
    answer: int | str  # an HTTP status, or "reset"
    times: int  # requests still to fail (-1: every one)


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        host, port = upstream.split("://")[1].split(":")
        proxy = self
        self.rules: list[Rule] = []
        self.failed = 0
        self._lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                body = self._body()
                rule = proxy._match(self.command, self.path)
                if rule == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.connection.close()
                    self.close_connection = True
                    return
                if isinstance(rule, int):
                    code = _S3_ERRORS.get(rule, "ServiceUnavailable")
                    data = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                            f"<Message>injected</Message></Error>").encode()
                    self.send_response(rule)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("transfer-encoding", "content-length")}
                headers["Content-Length"] = str(len(body))
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                # a HEAD answer has no body but the object's length
                length = resp.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                if "chunked" not in (self.headers.get("Transfer-Encoding") or "").lower():
                    return self.rfile.read(int(self.headers.get("Content-Length") or 0))
                out = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return out
                    out += self.rfile.read(size)
                    self.rfile.readline()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def fail(self, method: str, path_part: str, answer: int | str, times: int = -1) -> None:
        """Fail the next ``times`` (-1: all) ``method`` requests whose path holds ``path_part``."""
        with self._lock:
            self.rules.append(Rule(method, path_part, answer, times))

    def heal(self) -> None:
        with self._lock:
            self.rules.clear()

    def _match(self, method: str, path: str) -> int | str | None:
        with self._lock:
            for rule in self.rules:
                if rule.method == method and rule.path_part in path and rule.times != 0:
                    rule.times -= 1 if rule.times > 0 else 0
                    self.failed += 1
                    return rule.answer
        return None

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
