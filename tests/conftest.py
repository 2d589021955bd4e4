"""Shared fixtures: object-store servers on 127.0.0.1 and the storage a table lives on.

Servers (session-scoped, started on first use, stopped by the fixture that started them):

* ``moto_server``    - moto's threaded server in this process (:func:`tests.s3_servers.start_moto`)
* ``seaweed_server`` - SeaweedFS ``weed mini`` child process, killed by pid at session end
* ``azurite_server`` - Azurite's blob service child process (:mod:`tests.azurite`), killed by
  pid at session end; skipped where Azurite is not installed unless
  ``MINIPAIMON_REQUIRE_AZURITE=1`` (scripts/test.sh installs it and sets that)

Storage (function-scoped; each test gets a fresh local directory, bucket or container):

* ``storage``     - parametrised ``local``, ``s3-moto`` and ``azure``
* ``storage_all`` - parametrised ``local``, ``s3-moto``, ``s3-seaweed`` and ``azure``
* ``object_storage`` - parametrised ``s3-moto``, ``s3-seaweed`` and ``azure``
* ``race_storage`` - ``s3-seaweed`` and ``azure`` (races: moto's conditional PUT is not
  linearizable)
* ``credential_storage`` - ``s3-seaweed`` and ``azure`` (servers that check credentials:
  moto accepts any)

A :class:`Storage` gives table paths (``storage.path("t")``) and sets the environment
variables of its server for the test (``monkeypatch``: ``AWS_*`` or ``AZURE_STORAGE_*``), so
plain ``mp.create_table(path, …)`` / ``mp.open_table(path)`` and child processes reach the
server with no extra arguments. ``storage.options`` holds the same settings as ``s3.*`` /
``azure.*`` options for tests that pass options.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import settings as hypothesis_settings

from minipaimon_core.io.fileio import UNSAFE_NO_FSYNC_ENV
from tests.azurite import AzuriteServer, azurite_binary, start_azurite
from tests.s3_servers import S3Server, start_moto, start_seaweed

S = TypeVar("S")

# The suite's local tables are scratch: they are not fsynced (MINIPAIMON_UNSAFE_NO_FSYNC=1,
# inherited by Spark's workers and child processes). A CI disk charges milliseconds an
# fsync, and the suite's commits make hundreds of thousands of them. A kill loses nothing
# without fsync (the page cache survives a process), so the crash tests hold.
# tests/test_durability.py checks what a commit syncs, with fsync on. Set it to 0 to run the
# whole suite with fsync.
os.environ.setdefault(UNSAFE_NO_FSYNC_ENV, "1")

# Property tests draw the same examples every run (no example database, no deadline on a
# busy 2-core machine): a red run is a bug in the code, not a draw that happened this time.
hypothesis_settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
hypothesis_settings.load_profile("deterministic")


def _started(start: Callable[[str], S], base: Path, attempts: int = 3) -> S:
    """``start(directory)``, in a fresh directory under ``base`` each attempt: the free
    ports a server is given can be taken by another process (another worker's server)
    before it binds them, and it then fails to start (RuntimeError)."""
    for attempt in range(1, attempts):
        try:
            return start(str(base / f"attempt-{attempt}"))
        except RuntimeError:
            continue
    return start(str(base / f"attempt-{attempts}"))


@pytest.fixture(scope="session")
def moto_server() -> Iterator[S3Server]:
    pytest.importorskip("moto")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = start_moto()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def seaweed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = _started(start_seaweed, tmp_path_factory.mktemp("seaweed"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AzuriteServer]:
    if azurite_binary() is None and os.environ.get("MINIPAIMON_REQUIRE_AZURITE") != "1":
        pytest.skip("Azurite is not installed (scripts/test.sh installs it into .azurite/)")
    server = _started(start_azurite, tmp_path_factory.mktemp("azurite"))
    yield server
    server.stop()


@dataclass
class Storage:
    """Where one test's tables live: a local directory, a fresh bucket of an S3 server or a
    fresh container of Azurite."""

    kind: str  # "local" | "s3-moto" | "s3-seaweed" | "azure"
    root: str
    server: S3Server | AzuriteServer | None = None
    options: dict[str, str] = field(default_factory=dict)

    @property
    def is_object_store(self) -> bool:
        return self.server is not None

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def list_all(self, prefix: str) -> dict[str, bytes]:
        """Every file under ``prefix`` (a path of this storage) with its content."""
        if self.server is None:
            import os

            out = {}
            for d, _, files in os.walk(prefix):
                for f in files:
                    with open(os.path.join(d, f), "rb") as fh:
                        out[os.path.join(d, f)] = fh.read()
            return out
        bucket, _, key = prefix.partition("://")[2].partition("/")
        if isinstance(self.server, AzuriteServer):
            import obstore

            store = self.server.store(bucket)
            return {f"az://{bucket}/{o['path']}": bytes(obstore.get(store, o["path"]).bytes())
                    for chunk in obstore.list(store, key + "/") for o in chunk}
        client = self.server.client()
        out = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
            for obj in page.get("Contents", []):
                body = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
                out[f"s3://{bucket}/{obj['Key']}"] = body
        return out


def _storage(request: pytest.FixtureRequest, kind: str) -> Storage:
    tmp_path = request.getfixturevalue("tmp_path")
    if kind == "local":
        return Storage("local", str(tmp_path))
    monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
    if kind == "azure":
        azurite: AzuriteServer = request.getfixturevalue("azurite_server")
        for name, value in azurite.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("AZURE_STORAGE_SAS_TOKEN", raising=False)
        container = azurite.create_container()
        return Storage(kind, f"az://{container}/warehouse", azurite, azurite.options())
    server: S3Server = request.getfixturevalue("moto_server" if kind == "s3-moto" else "seaweed_server")
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    bucket = server.create_bucket()
    return Storage(kind, f"s3://{bucket}/warehouse", server, server.options())


@pytest.fixture(params=["local", "s3-moto", "azure"])
def storage(request: pytest.FixtureRequest) -> Storage:
    return _storage(request, request.param)


@pytest.fixture(params=["local", "s3-moto", "s3-seaweed", "azure"])
def storage_all(request: pytest.FixtureRequest) -> Storage:
    return _storage(request, request.param)


@pytest.fixture(params=["s3-moto", "s3-seaweed", "azure"])
def object_storage(request: pytest.FixtureRequest) -> Storage:
    return _storage(request, request.param)


@pytest.fixture(params=["s3-seaweed", "azure"])
def race_storage(request: pytest.FixtureRequest) -> Storage:
    return _storage(request, request.param)


@pytest.fixture(params=["s3-seaweed", "azure"])
def credential_storage(request: pytest.FixtureRequest) -> Storage:
    return _storage(request, request.param)
