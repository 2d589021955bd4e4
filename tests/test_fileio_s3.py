"""Path resolution, S3 settings, and the object-store FileIO on real servers on 127.0.0.1."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.io.fileio import LocalFileIO
from minipaimon_core.io.fileio_object import ObjectStoreFileIO
from minipaimon_core.io.fileio_resolve import normalize_path, resolve, split_options
from minipaimon_core.io.fileio_s3 import S3Settings
from tests.helpers import SCHEMA, rows, sorted_ids

# -- path resolution ------------------------------------------------------------------------


@pytest.mark.parametrize("given, root", [
    ("/data/t", "/data/t"),
    ("data/t", "data/t"),
    ("file:/data/t", "/data/t"),
    ("file:///data/t", "/data/t"),
    ("file://localhost/data/t", "/data/t"),
    ("file:///data/my%20t", "/data/my t"),
    ("a:b", "a:b"),  # a file name with a colon, not a scheme
    ("s3://bucket/wh/t/", "s3://bucket/wh/t"),
    ("S3A://bucket/t", "s3a://bucket/t"),
])
def test_paths_normalise_to_a_table_root(given, root):
    assert normalize_path(given) == root


@pytest.mark.parametrize("bad", ["foo://bucket/t", "hdfs:/data/t", "gs://b/t", "s3://", "s3:///t",
                                 "file://otherhost/data/t", "", "   "])
def test_unknown_or_malformed_paths_are_refused(bad):
    with pytest.raises(mp.InvalidArgumentError):
        normalize_path(bad)


def test_an_unknown_scheme_creates_nothing_locally(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mp.InvalidArgumentError, match="unsupported storage scheme 'foo'"):
        mp.create_table("foo://bucket/t", SCHEMA)
    with pytest.raises(mp.InvalidArgumentError, match="unsupported storage scheme"):
        mp.open_table("gs://bucket/t")
    assert os.listdir(tmp_path) == []


def test_file_uris_open_the_same_local_table(tmp_path):
    path = str(tmp_path / "t")
    mp.create_table("file://" + path, SCHEMA).write(rows(0, 3))
    for uri in (path, "file:" + path, "file://" + path, "file://localhost" + path):
        t = mp.open_table(uri)
        assert t.path == path and isinstance(t.io, LocalFileIO)
        assert sorted_ids(t.to_arrow()) == [0, 1, 2]
    assert sorted(os.listdir(tmp_path)) == ["t"]  # no directory named "file:"


def test_s3_paths_get_an_object_store_io_shared_per_setting():
    opts = {"s3.endpoint": "http://127.0.0.1:9", "s3.access-key": "k", "s3.secret-key": "s"}
    root, io = resolve("s3a://b/t/", opts)
    assert root == "s3a://b/t" and isinstance(io, ObjectStoreFileIO)
    assert resolve("s3://b/u", dict(opts))[1] is io
    assert resolve("s3://b/u", {**opts, "s3.region": "eu-west-1"})[1] is not io


def test_connection_options_are_split_from_table_options():
    conn, table = split_options({"S3.Endpoint": "http://x", "bucket": "2", "s3.secret-key": "s"})
    assert conn == {"S3.Endpoint": "http://x", "s3.secret-key": "s"} and table == {"bucket": "2"}


# -- settings --------------------------------------------------------------------------------

ENV = {"AWS_ENDPOINT_URL": "http://127.0.0.1:1234", "AWS_ACCESS_KEY_ID": "env-key",
       "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_SESSION_TOKEN": "env-token",
       "AWS_DEFAULT_REGION": "eu-central-1"}


def test_settings_fall_back_to_the_aws_environment():
    s = S3Settings.resolve({}, ENV)
    assert (s.endpoint, s.access_key, s.secret_key, s.session_token, s.region, s.path_style) == (
        "http://127.0.0.1:1234", "env-key", "env-secret", "env-token", "eu-central-1", True)
    assert S3Settings.resolve({}, {**ENV, "AWS_REGION": "us-west-2"}).region == "us-west-2"
    assert S3Settings.resolve({}, {}).path_style is False  # AWS itself: virtual-hosted


def test_options_win_and_credentials_are_one_set():
    s = S3Settings.resolve({"s3.endpoint": "https://s3.example.com/", "s3.access-key": "k",
                            "s3.secret-key": "sec", "s3.path-style-access": "false",
                            "s3.region": "ap-south-1"}, ENV)
    assert (s.endpoint, s.access_key, s.secret_key, s.session_token, s.region, s.path_style) == (
        "https://s3.example.com", "k", "sec", None, "ap-south-1", False)


@pytest.mark.parametrize("opts, match", [
    ({"s3.endpoint": "127.0.0.1:9000"}, "s3.endpoint"),
    ({"s3.access-key": "k"}, "s3.secret-key"),
    ({"s3.path-style-access": "yes"}, "s3.path-style-access"),
    ({"s3.secret": "x"}, "unknown object-store option"),
])
def test_bad_settings_are_refused_by_name(opts, match):
    with pytest.raises(mp.InvalidArgumentError, match=match):
        S3Settings.resolve(opts, {})


def test_settings_never_show_a_secret():
    s = S3Settings.resolve({}, ENV)
    text = repr(s) + s.describe() + repr(ObjectStoreFileIO(s))
    assert "env-secret" not in text and "env-token" not in text and "env-key" not in text
    assert s.redact("key env-key secret env-secret token env-token") == "key *** secret *** token ***"


# -- the object-store FileIO on real servers ------------------------------------------------


def test_write_if_absent_creates_once(object_storage):
    io = resolve(object_storage.path("x"), object_storage.options)[1]
    path = object_storage.path("dir/snapshot-1")
    assert io.write_if_absent(path, b"first")
    assert not io.write_if_absent(path, b"second")
    assert io.read_bytes(path) == b"first"
    io.replace(path, b"third")
    assert io.read_bytes(path) == b"third"
    assert io.list_names(object_storage.path("dir")) == ["snapshot-1"]
    assert io.list_names(object_storage.path("nothing")) == []
    assert io.delete(path) and not io.delete(path) and not io.exists(path)
    with pytest.raises(FileNotFoundError):
        io.read_bytes(path)
    with pytest.raises(FileNotFoundError):
        io.open_input(path)


def test_racing_conditional_creates_have_exactly_one_winner(race_storage):
    io = resolve(race_storage.path("x"), race_storage.options)[1]
    for round_ in range(3):  # SeaweedFS holds each loser up to seconds: keep it small
        path = race_storage.path(f"race/snapshot-{round_}")
        barrier = threading.Barrier(6)

        def attempt(i: int, path: str = path, barrier: threading.Barrier = barrier) -> bool:
            barrier.wait()
            return io.write_if_absent(path, f"writer {i}".encode())

        with ThreadPoolExecutor(6) as pool:
            won = list(pool.map(attempt, range(6)))
        assert won.count(True) == 1, won
        assert io.read_bytes(path) == f"writer {won.index(True)}".encode()


def test_listing_pages_past_a_thousand_objects(race_storage):
    io = resolve(race_storage.path("x"), race_storage.options)[1]
    names = [f"snapshot-{i}" for i in range(1, 1102)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda n: io.write_bytes(race_storage.path(f"many/{n}"), b"x"), names))
    assert sorted(io.list_names(race_storage.path("many"))) == sorted(names)
    assert len(io.list_files(race_storage.path("many"))) == len(names)


def test_credentials_are_never_written_or_shown(credential_storage, monkeypatch, caplog):
    """Options only (no environment): no object the table writes, no system table, log
    line or error holds the key or secret; a wrong one is refused and not echoed."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
                 "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    opts = credential_storage.options
    azure = credential_storage.kind == "azure"
    secrets = [opts["azure.account-key"]] if azure else [opts["s3.secret-key"], opts["s3.access-key"]]
    path = credential_storage.path("t")
    t = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={**opts, "bucket": "2", "changelog-producer": "input"})
    for i in range(3):
        t.write(rows(i * 5, 10))
    t = mp.open_table(path, options=opts)
    t.compact(full=True)
    t.create_tag("v1")
    t.add_column("extra", pa.int32())
    t.set_options({"snapshot.num-retained.max": "10"})
    t.expire_snapshots(retain_max=3)
    assert not any(k.startswith(("s3.", "azure.")) for k in t.options())
    for name in ("options", "schemas", "snapshots", "files", "tags"):
        text = str(t.system_table(name).to_pylist())
        assert not any(s in text for s in secrets), name
    files = credential_storage.list_all(path)
    assert any("/schema/schema-" in p for p in files) and any("/snapshot/snapshot-" in p for p in files)
    for p, body in files.items():
        assert not any(s.encode() in body for s in secrets), p
    wrong = ({"azure.account-key": "d3Jvbmctc2VjcmV0LTEyMw=="} if azure  # base64 of wrong-secret-123
             else {"s3.secret-key": "wrong-secret-123"})
    with pytest.raises(mp.StorageError) as e:  # a wrong secret: refused, and not echoed
        mp.open_table(path, options={**opts, **wrong})
    assert not any(v in str(e.value) for v in wrong.values())
    if not azure:
        with pytest.raises(mp.StorageError) as e:
            mp.open_table(path, options={**opts, "s3.access-key": "no-such-key-456"})
        assert "no-such-key-456" not in str(e.value)
    assert not any(s in caplog.text for s in secrets)


# -- processes forked after the object store was used ----------------------------------------

FORK_TYPED = 3


def _child_write(path: str, options: dict[str, str], start: int) -> None:
    """A worker process: open the table and write (exit FORK_TYPED on the typed refusal)."""
    try:
        mp.open_table(path, options=options).write(rows(start, 3))
    except mp.StorageError as e:
        os._exit(FORK_TYPED if "spawn" in str(e) and "forkserver" in str(e) else 1)


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_a_child_process_writes_or_fails_typed_within_seconds(object_storage, method):
    """A parent that created the table starts a worker: forked, it gets a typed error at
    once (obstore's runtime does not survive fork; the message names spawn/forkserver);
    spawned or from a forkserver, it writes."""
    import multiprocessing

    path = object_storage.path(f"fork-{method}")
    t = mp.create_table(path, SCHEMA, options=object_storage.options)
    t.write(rows(0, 3))
    child = multiprocessing.get_context(method).Process(
        target=_child_write, args=(path, object_storage.options, 3))
    child.start()
    child.join(60)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive, "the child hung"
    assert child.exitcode == (FORK_TYPED if method == "fork" else 0)
    assert sorted_ids(t.refresh().to_arrow()) == list(range(3 if method == "fork" else 6))
