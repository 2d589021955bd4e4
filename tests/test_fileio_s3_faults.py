"""The object-store commit point against faulty stores: a real HTTP proxy on 127.0.0.1 in
front of the moto server or Azurite that either drops ``If-None-Match`` (a store without
conditional writes) or forwards a conditional PUT and then resets the connection (outcome
unknown)."""

from __future__ import annotations

import http.client
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import minipaimon_core as mp
from minipaimon_core.io import fileio_object
from minipaimon_core.io.fileio_azure import AzureSettings
from minipaimon_core.io.fileio_object import ObjectStoreFileIO
from minipaimon_core.io.fileio_s3 import S3Settings
from tests.helpers import SCHEMA


class FaultyProxy:
    """Forwards every request to ``upstream``; ``mode`` says what goes wrong."""

    def __init__(self, upstream: str, mode: str) -> None:
        host, port = upstream.split("://")[1].split("/")[0].split(":")
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


@pytest.fixture(params=["s3", "azure"])
def proxied(request):
    """(proxy, table root's parent, FileIO through the proxy) on moto or Azurite; the
    proxy's mode is the test's indirect parameter."""
    mode = request.node.callspec.params["proxied_mode"]
    if request.param == "s3":
        server = request.getfixturevalue("moto_server")
        proxy = FaultyProxy(server.endpoint, mode)
        root = f"s3://{server.create_bucket()}"
        settings = S3Settings.resolve({**server.options(), "s3.endpoint": proxy.endpoint}, {})
    else:
        server = request.getfixturevalue("azurite_server")
        proxy = FaultyProxy(server.endpoint, mode)
        container = server.create_container()
        root = f"az://{container}"
        # a SAS, not the key: Shared Key signs If-None-Match, so a proxy dropping it would
        # be refused (403) rather than stand for a store that ignores it
        settings = AzureSettings.resolve(
            {"azure.account-name": server.account, "azure.sas-token": server.sas_token(container),
             "azure.endpoint": f"{proxy.endpoint}/{server.account}"}, {})
    yield proxy, root, ObjectStoreFileIO(settings)
    proxy.stop()
    fileio_object._probed.clear()


@pytest.mark.parametrize("proxied_mode", ["ignore-condition"])
def test_a_store_that_ignores_conditional_creates_is_refused(proxied, proxied_mode):
    proxy, root, io = proxied
    path = f"{root}/t"
    with pytest.raises(mp.StorageError, match="accepted a second conditional create"):
        mp.create_table(path, SCHEMA, io=io)
    assert io.list_names(f"{root}/t/schema") == []  # nothing written, probe removed
    assert [f.name for f in io.list_files(f"{root}/t/schema")] == []


@pytest.mark.parametrize("proxied_mode", ["reset-after-put"])
def test_a_commit_whose_response_is_lost_is_decided_by_reading_back(proxied, proxied_mode):
    """The conditional PUT of a snapshot lands but its answer is lost (connection reset):
    the outcome is unknown, so the FileIO reads the object back - ours, so a success."""
    proxy, root, io = proxied
    path = f"{root}/t/snapshot/snapshot-1"
    assert io.write_if_absent(path, b"snapshot one")
    assert proxy.resets == 1
    assert io.read_bytes(path) == b"snapshot one"
    assert not io.write_if_absent(path, b"another writer's snapshot")  # a real loss
    assert io.read_bytes(path) == b"snapshot one"


FORKED_WHILE_READING = """
import os, sys, threading, time
import minipaimon_core as mp
from minipaimon_core.io.fileio_azure import AzureSettings
from minipaimon_core.io.fileio_object import ObjectStoreFileIO
from minipaimon_core.io.fileio_s3 import S3Settings
from tests.helpers import SCHEMA, rows
from tests.test_fileio_s3_faults import FaultyProxy

upstream, root, options = sys.argv[1], sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
proxy = FaultyProxy(upstream, "stall-data-get")
if root.startswith("s3://"):
    settings = S3Settings.resolve({**options, "s3.endpoint": proxy.endpoint}, {})
else:
    account = options["azure.account-name"]
    settings = AzureSettings.resolve({**options, "azure.endpoint": f"{proxy.endpoint}/{account}"}, {})
io = ObjectStoreFileIO(settings)
path = f"{root}/t"
mp.create_table(path, SCHEMA, options=options).write(rows(0, 3))  # straight to the store
reader = threading.Thread(target=lambda: mp.open_table(path, io=io).to_arrow(), daemon=True)
reader.start()
assert proxy.stalled.wait(30)  # the parent's read holds a data-file request in flight
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


@pytest.mark.parametrize("store", ["s3", "azure"])
def test_a_child_forked_while_the_parent_reads_exits_promptly(request, store):
    """Issue 32 item 8: a child forked while a thread of its parent has a data-file request
    of Arrow's client in flight (held by a stalling proxy) gets the documented StorageError,
    then hung at interpreter exit (Arrow's S3 finalization waits for the parent's request).
    It now exits, with its own exit status; on Azure (Arrow's Azure client) too."""
    import subprocess
    import sys

    if store == "s3":
        server = request.getfixturevalue("moto_server")
        root, upstream = f"s3://{server.create_bucket()}", server.endpoint
    else:
        server = request.getfixturevalue("azurite_server")
        root, upstream = f"az://{server.create_container()}", server.endpoint
    options = [f"{k}={v}" for k, v in server.options().items()]
    out = subprocess.run([sys.executable, "-c", FORKED_WHILE_READING, upstream, root, *options],
                         capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1:] == ["child 3"], out.stderr[-3000:]
