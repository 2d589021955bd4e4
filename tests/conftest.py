"""Shared fixtures: S3-compatible servers on 127.0.0.1 and the storage a table lives on.

Servers (session-scoped, started on first use, stopped by the fixture that started them):

* ``moto_server``    - moto's threaded server in this process (:func:`tests.s3_servers.start_moto`)
* ``seaweed_server`` - SeaweedFS ``weed mini`` child process, killed by pid at session end

Storage (function-scoped; each test gets a fresh local directory or a fresh bucket):

* ``storage``     - parametrised ``local`` and ``s3-moto``
* ``storage_all`` - parametrised ``local``, ``s3-moto`` and ``s3-seaweed``
* ``s3_storage``  - parametrised ``s3-moto`` and ``s3-seaweed``
* ``seaweed_storage`` - ``s3-seaweed`` only (races: moto's conditional PUT is not linearizable)

A :class:`Storage` gives table paths (``storage.path("t")``) and sets the AWS environment
variables of its server for the test (``monkeypatch``), so plain ``mp.create_table(path, …)``
/ ``mp.open_table(path)`` and child processes reach the server with no extra arguments.
``storage.options`` holds the same settings as ``s3.*`` options for tests that pass options.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.s3_servers import S3Server, start_moto, start_seaweed


@pytest.fixture(scope="session")
def moto_server() -> Iterator[S3Server]:
    pytest.importorskip("moto")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = start_moto()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def seaweed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = start_seaweed(str(tmp_path_factory.mktemp("seaweed")))
    yield server
    server.stop()


@dataclass
class Storage:
    """Where one test's tables live: a local directory or a fresh bucket of a server."""

    kind: str  # "local" | "s3-moto" | "s3-seaweed"
    root: str
    server: S3Server | None = None
    options: dict[str, str] = field(default_factory=dict)

    @property
    def is_s3(self) -> bool:
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
    server: S3Server = request.getfixturevalue("moto_server" if kind == "s3-moto" else "seaweed_server")
    monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    bucket = server.create_bucket()
    return Storage(kind, f"s3://{bucket}/warehouse", server, server.options())


@pytest.fixture(params=["local", "s3-moto"])
def storage(request: pytest.FixtureRequest) -> Storage:
    return _storage(request, request.param)


@pytest.fixture(params=["local", "s3-moto", "s3-seaweed"])
def storage_all(request: pytest.FixtureRequest) -> Storage:
    return _storage(request, request.param)


@pytest.fixture(params=["s3-moto", "s3-seaweed"])
def s3_storage(request: pytest.FixtureRequest) -> Storage:
    return _storage(request, request.param)


@pytest.fixture
def seaweed_storage(request: pytest.FixtureRequest) -> Storage:
    return _storage(request, "s3-seaweed")
