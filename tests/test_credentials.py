"""No credential or option value in an error, a ``repr`` or a log line (issue 32 item 2).

An endpoint URL holding credentials (``http://KEY:SECRET@host``) is refused, naming the
options to use instead; a table path holding them likewise; a failing store's errors and the
FileIO's ``repr`` never show a secret; option errors name the option, never its value (a
secret pasted into the wrong option must not be echoed)."""

from __future__ import annotations

import logging

import pytest

import minipaimon_core as mp
from minipaimon_core.io.fileio_object import ObjectStoreFileIO
from minipaimon_core.io.fileio_resolve import resolve
from minipaimon_core.io.fileio_s3 import S3Settings
from tests.helpers import SCHEMA, rows
from tests.s3_servers import free_port

KEY, SECRET = "AKIAEXAMPLEKEY42", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYSECRET"


def assert_no_secret(text: str) -> None:
    assert KEY not in text and SECRET not in text and "K7MDENG" not in text, text


@pytest.mark.parametrize("endpoint", [f"http://{KEY}:{SECRET}@127.0.0.1:9000",
                                      f"https://{KEY}@s3.example.com", f"http://:{SECRET}@h"])
def test_an_endpoint_holding_credentials_is_refused_without_echoing_them(endpoint: str) -> None:
    with pytest.raises(mp.InvalidArgumentError, match="s3.access-key") as err:
        S3Settings.resolve({"s3.endpoint": endpoint}, {})
    assert_no_secret(str(err.value))
    with pytest.raises(mp.InvalidArgumentError, match="AWS_ACCESS_KEY_ID") as err:
        S3Settings.resolve({}, {"AWS_ENDPOINT_URL": endpoint})
    assert_no_secret(str(err.value))


def test_a_table_path_holding_credentials_is_refused_without_echoing_them() -> None:
    for path in (f"s3://{KEY}:{SECRET}@bucket/t", f"s3a://{KEY}@bucket/t"):
        with pytest.raises(mp.InvalidArgumentError, match="s3") as err:
            resolve(path, {"s3.endpoint": "http://127.0.0.1:1"})
        assert_no_secret(str(err.value))
    with pytest.raises(mp.InvalidArgumentError) as err:
        mp.open_table(f"https://{KEY}:{SECRET}@example.com/t")
    assert_no_secret(str(err.value))


def test_a_failing_store_never_shows_a_credential(caplog: pytest.LogCaptureFixture) -> None:
    settings = S3Settings.resolve({"s3.endpoint": f"http://127.0.0.1:{free_port()}", "s3.access-key": KEY,
                                   "s3.secret-key": SECRET, "s3.region": "us-east-1"}, {})
    io = ObjectStoreFileIO(settings)
    assert_no_secret(repr(io) + repr(settings))
    with caplog.at_level(logging.DEBUG), pytest.raises(mp.StorageError) as err:
        io.read_bytes("s3://bucket/t/snapshot/LATEST")
    assert_no_secret(str(err.value))
    with pytest.raises(mp.StorageError) as err:
        mp.create_table("s3://bucket/t", SCHEMA, io=io)
    assert_no_secret(str(err.value) + caplog.text)


@pytest.mark.parametrize("option", ["bucket", "target-file-size", "merge-engine", "write-only",
                                    "snapshot.time-retained", "commit.max-retries", "bucket-key",
                                    "sequence.field", "fields.v.aggregate-function"])
def test_an_option_error_never_echoes_the_value(tmp_path, option: str) -> None:
    """A secret given as the value of another option (a paste into the wrong field)."""
    with pytest.raises(mp.UnsupportedOptionError, match=option.replace(".", r"\.")) as err:
        mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                        options={option: SECRET, "merge-engine": "aggregation"}
                        if option.startswith("fields.") else {option: SECRET})
    assert_no_secret(str(err.value))
    t = mp.create_table(str(tmp_path / "ok"), SCHEMA)
    t.write(rows(0, 1))
    if option in ("bucket", "target-file-size", "write-only"):
        with pytest.raises(mp.UnsupportedOptionError) as err:
            t.set_options({option: SECRET})
        assert_no_secret(str(err.value))


@pytest.mark.parametrize("option", ["s3.endpoint", "s3.path-style-access"])
def test_a_connection_option_error_never_echoes_the_value(option: str) -> None:
    with pytest.raises(mp.InvalidArgumentError, match=option.replace(".", r"\.")) as err:
        S3Settings.resolve({option: SECRET}, {})
    assert_no_secret(str(err.value))
