"""The object-store commit point against faulty stores: a real HTTP proxy on 127.0.0.1 in
front of the moto server that either drops ``If-None-Match`` (a store without conditional
writes) or forwards a conditional PUT and then resets the connection (outcome unknown)."""

from __future__ import annotations

import http.client
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import minipaimon_core as mp
from minipaimon_core import fileio_object
from minipaimon_core.fileio_object import ObjectStoreFileIO
from minipaimon_core.fileio_s3 import S3Settings
from tests.helpers import SCHEMA


class FaultyProxy:
    """Forwards every request to ``upstream``; ``mode`` says what goes wrong."""

    def __init__(self, upstream: str, mode: str) -> None:
        host, port = upstream.split("://")[1].split(":")
        proxy = self
        self.mode = mode
        self.resets = 0
        self.stalled = threading.Event()  # "stall-data-get": a data file GET is held
        self.release = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                headers = dict(self.headers.items())
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    body = self._read_chunked()
                    headers = {k: v for k, v in headers.items()
                               if k.lower() not in ("transfer-encoding", "content-length")}
                    headers["Content-Length"] = str(len(body))
                else:
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                conditional = any(k.lower() == "if-none-match" for k in headers)
                if proxy.mode == "stall-data-get" and self.command == "GET" \
                        and self.path.split("?")[0].endswith(".parquet"):
                    proxy.stalled.set()  # the client's request is in flight until released
                    proxy.release.wait(60)
                if proxy.mode == "ignore-condition":
                    headers = {k: v for k, v in headers.items() if k.lower() != "if-none-match"}
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                if proxy.mode == "reset-after-put" and conditional and proxy.resets == 0 \
                        and "/snapshot/snapshot-" in self.path:
                    proxy.resets += 1  # the PUT landed; the client never hears it
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.connection.close()
                    self.close_connection = True
                    return
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                length = resp.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))  # HEAD: no body
                self.end_headers()
                self.wfile.write(data)

            def _read_chunked(self) -> bytes:
                out = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return out
                    out += self.rfile.read(size)
                    self.rfile.readline()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxied(moto_server, request):
    proxy = FaultyProxy(moto_server.endpoint, request.param)
    bucket = moto_server.create_bucket()
    settings = S3Settings.resolve({**moto_server.options(), "s3.endpoint": proxy.endpoint}, {})
    yield proxy, bucket, ObjectStoreFileIO(settings)
    proxy.stop()
    fileio_object._probed.clear()


@pytest.mark.parametrize("proxied", ["ignore-condition"], indirect=True)
def test_a_store_that_ignores_conditional_creates_is_refused(proxied):
    proxy, bucket, io = proxied
    path = f"s3://{bucket}/t"
    with pytest.raises(mp.StorageError, match="accepted a second conditional create"):
        mp.create_table(path, SCHEMA, io=io)
    assert io.list_names(f"s3://{bucket}/t/schema") == []  # nothing written, probe removed
    assert [f.name for f in io.list_files(f"s3://{bucket}/t/schema")] == []


@pytest.mark.parametrize("proxied", ["reset-after-put"], indirect=True)
def test_a_commit_whose_response_is_lost_is_decided_by_reading_back(proxied):
    """The conditional PUT of a snapshot lands but its answer is lost (connection reset):
    the outcome is unknown, so the FileIO reads the object back - ours, so a success."""
    proxy, bucket, io = proxied
    path = f"s3://{bucket}/t/snapshot/snapshot-1"
    assert io.write_if_absent(path, b"snapshot one")
    assert proxy.resets == 1
    assert io.read_bytes(path) == b"snapshot one"
    assert not io.write_if_absent(path, b"another writer's snapshot")  # a real loss
    assert io.read_bytes(path) == b"snapshot one"


FORKED_WHILE_READING = """
import os, sys, threading, time
import minipaimon_core as mp
from minipaimon_core.fileio_object import ObjectStoreFileIO
from minipaimon_core.fileio_s3 import S3Settings
from tests.helpers import SCHEMA, rows
from tests.test_fileio_s3_faults import FaultyProxy

upstream, bucket, options = sys.argv[1], sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
proxy = FaultyProxy(upstream, "stall-data-get")
io = ObjectStoreFileIO(S3Settings.resolve({**options, "s3.endpoint": proxy.endpoint}, {}))
path = f"s3://{bucket}/t"
mp.create_table(path, SCHEMA, options=options).write(rows(0, 3))  # straight to the store
reader = threading.Thread(target=lambda: mp.open_table(path, io=io).to_arrow(), daemon=True)
reader.start()
assert proxy.stalled.wait(30)  # the parent's read holds an S3 request in flight
pid = os.fork()
if pid == 0:
    try:
        mp.open_table(path, io=io).to_arrow()
    except mp.StorageError:
        sys.exit(3)  # the documented refusal, then a normal interpreter exit
    sys.exit(4)
for _ in range(600):  # up to 60 s
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.1)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    status = None
proxy.release.set()
reader.join(60)
print("child", "hung" if status is None else os.waitstatus_to_exitcode(status), flush=True)
os._exit(0)
"""


def test_a_child_forked_while_the_parent_reads_exits_promptly(moto_server):
    """Issue 32 item 8: a child forked while a thread of its parent has an S3 request of
    Arrow's client in flight (held by a stalling proxy) gets the documented StorageError,
    then hung at interpreter exit (Arrow's S3 finalization waits for the parent's request).
    It now exits, with its own exit status."""
    import subprocess
    import sys

    bucket = moto_server.create_bucket()
    options = [f"{k}={v}" for k, v in moto_server.options().items()]
    out = subprocess.run([sys.executable, "-c", FORKED_WHILE_READING, moto_server.endpoint, bucket, *options],
                         capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1:] == ["child 3"], out.stderr[-3000:]
