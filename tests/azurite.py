"""Azurite, Microsoft's Azure Storage emulator, on 127.0.0.1 for tests and benchmarks.

:func:`start_azurite` runs ``azurite-blob`` (the blob service only) as a child process on a
free port of 127.0.0.1, with telemetry off (without ``--disableTelemetry`` Azurite reaches
out to the internet), its data in a directory of the caller, and the emulator's published
development account (``devstoreaccount1`` and its well-known key: not a secret). The
returned :class:`AzuriteServer`'s ``stop()`` ends exactly that process, by its pid.

Azurite comes from npm into ``.azurite/`` of the repository (``scripts/test.sh`` installs
it; ``azurite-blob`` on PATH works too). Measured on the 2-core test machine: ~1.5 s from
start to the first answer; one server serves a whole test session.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.s3_servers import free_port

REPO = Path(__file__).resolve().parents[1]
ACCOUNT = "devstoreaccount1"
# Azurite's published development key (learn.microsoft.com, "Use Azurite"): public.
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@dataclass
class AzuriteServer:
    """A running Azurite blob service and the settings a client needs."""

    endpoint: str  # the account's blob endpoint: http://127.0.0.1:<port>/devstoreaccount1
    account: str = ACCOUNT
    key: str = field(default=KEY, repr=False)
    _stop: Callable[[], None] = field(default=lambda: None, repr=False)

    def options(self) -> dict[str, str]:
        """The minipaimon ``azure.*`` connection options for this server."""
        return {"azure.account-name": self.account, "azure.account-key": self.key,
                "azure.endpoint": self.endpoint}

    def env(self) -> dict[str, str]:
        """The same settings as environment variables."""
        return {"AZURE_STORAGE_ACCOUNT_NAME": self.account, "AZURE_STORAGE_ACCOUNT_KEY": self.key,
                "AZURE_STORAGE_ENDPOINT": self.endpoint}

    def create_container(self, name: str | None = None) -> str:
        """Create a container (a fresh random name by default) and return its name."""
        import pyarrow.fs as pafs

        name = name or f"t-{uuid.uuid4().hex[:16]}"
        host = self.endpoint.split("://", 1)[1].split("/", 1)[0]
        fs = pafs.AzureFileSystem(account_name=self.account, account_key=self.key,
                                  blob_storage_authority=host, blob_storage_scheme="http",
                                  dfs_storage_authority=host, dfs_storage_scheme="http")
        fs.create_dir(name)
        return name

    def sas_token(self, container: str, permissions: str = "racwdl", hours: int = 2) -> str:
        """A service shared access signature for ``container`` (signed with the key as Azure
        specifies for version 2021-08-06; the emulator checks the signature). A container
        SAS, not an account SAS: Azurite refuses a blob batch (obstore's delete) with the
        latter."""
        expiry = (datetime.datetime.now(datetime.timezone.utc)
                  + datetime.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")
        version = "2021-08-06"
        signed = "\n".join([permissions, "", expiry, f"/blob/{self.account}/{container}", "", "",
                            "https,http", version, "c", "", "", "", "", "", "", ""])
        sig = base64.b64encode(hmac.new(base64.b64decode(self.key), signed.encode(),
                                        hashlib.sha256).digest()).decode()
        return urllib.parse.urlencode({"sv": version, "sp": permissions, "se": expiry,
                                       "spr": "https,http", "sr": "c", "sig": sig})

    def store(self, container: str):  # -> obstore AzureStore (tests only)
        from obstore.store import AzureStore

        return AzureStore(container, config={"account_name": self.account, "account_key": self.key,
                                             "endpoint": self.endpoint},
                          client_options={"allow_http": True})

    def stop(self) -> None:
        self._stop()


def azurite_binary() -> str | None:
    """``azurite-blob`` of the repository's ``.azurite/`` (scripts/test.sh), or on PATH."""
    local = REPO / ".azurite" / "node_modules" / ".bin" / "azurite-blob"
    return str(local) if local.exists() else shutil.which("azurite-blob")


def start_azurite(data_dir: str, timeout_s: float = 60.0) -> AzuriteServer:
    """``azurite-blob`` on a free port of 127.0.0.1 with its data in ``data_dir``; waits
    until it answers. Raises RuntimeError (with its log) if it does not come up in time."""
    binary = azurite_binary()
    if binary is None:
        raise RuntimeError("Azurite is not installed: run scripts/test.sh (it installs it into "
                           ".azurite/ from npm)")
    os.makedirs(data_dir, exist_ok=True)
    port = free_port()
    args = [binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", data_dir,
            "--disableTelemetry", "--skipApiVersionCheck", "--silent"]
    log_path = os.path.join(data_dir, "azurite.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=data_dir,
                                start_new_session=True)

    def stop() -> None:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()

    endpoint = f"http://127.0.0.1:{port}/{ACCOUNT}"
    deadline = time.monotonic() + timeout_s
    while not _answers(f"http://127.0.0.1:{port}/"):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop()
            with open(log_path, encoding="utf-8", errors="replace") as f:
                raise RuntimeError(f"Azurite did not start:\n{f.read()[-3000:]}")
        time.sleep(0.05)  # polling a readiness condition with a deadline
    return AzuriteServer(endpoint, _stop=stop)


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1).close()
        return True
    except urllib.error.HTTPError:
        return True  # an error status for an anonymous request: the server is up
    except OSError:
        return False
