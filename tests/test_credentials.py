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
from tests.s3_servers import refused_port

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
    with refused_port() as port:
        settings = S3Settings.resolve({"s3.endpoint": f"http://127.0.0.1:{port}", "s3.access-key": KEY,
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


class _MetadataService:
    """A stand-in EC2 instance metadata service on 127.0.0.1 that refuses every request with
    403, as a proxy answers off EC2; it records what it was asked."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        asked = self.asked = []

        class Refuse(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def refuse(self) -> None:
                asked.append((self.command, self.path))
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_PUT = refuse

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _open_and_create_errors(path: str, io: ObjectStoreFileIO) -> list[str]:
    """The StorageError messages of opening and of creating a table at ``path``."""
    messages = []
    for attempt in (lambda: mp.open_table(path, io=io), lambda: mp.create_table(path, SCHEMA, io=io)):
        with pytest.raises(mp.StorageError) as err:
            attempt()
        messages.append(str(err.value))
    return messages


def test_s3_without_credentials_says_so_not_the_metadata_services_403(
        moto_server, tmp_path, monkeypatch) -> None:
    """Issue 38 item 11: no key given and none in the environment. The AWS credential
    chain's last step (the instance metadata service) is pointed at a 403-answering server
    on 127.0.0.1 (obstore's AWS_METADATA_ENDPOINT; AWS_EC2_METADATA_DISABLED for pyarrow's
    SDK), so nothing leaves 127.0.0.1."""
    import os

    from minipaimon_core.io.fileio_object import ObjectStoreFileIO

    bucket = moto_server.create_bucket()
    imds = _MetadataService()
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", imds.endpoint)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    try:
        io = ObjectStoreFileIO(S3Settings.resolve({"s3.endpoint": moto_server.endpoint}))
        for message in _open_and_create_errors(f"s3://{bucket}/t", io):
            assert "no S3 credentials: give the options 's3.access-key' and 's3.secret-key' (or set " \
                   "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)" in message, message
            assert "403" in message  # what the chain met, after what to do
        assert imds.asked and all(path.startswith("/latest/") for _, path in imds.asked)
        assert moto_server.client().list_objects_v2(Bucket=bucket).get("KeyCount") == 0
    finally:
        imds.stop()
    # with keys, the same store answers (the message is about credentials, not the store)
    keyed = ObjectStoreFileIO(S3Settings.resolve({**moto_server.options()}, {}))
    assert mp.create_table(f"s3://{bucket}/t", SCHEMA, io=keyed).to_arrow().num_rows == 0


def test_azure_without_credentials_says_so_not_the_identity_endpoints_answer(
        azurite_server, tmp_path, monkeypatch) -> None:
    """As for S3: an account but no key, no SAS token and none in the environment. The
    Azure identity chain's last step (the managed identity endpoint) is pointed at a
    403-answering server on 127.0.0.1 (obstore's AZURE_MSI_ENDPOINT), so nothing leaves
    127.0.0.1; then the same store with its key answers."""
    import os

    from minipaimon_core.io.fileio_azure import AzureSettings

    container = azurite_server.create_container()
    imds = _MetadataService()
    for name in [n for n in os.environ if n.startswith(("AZURE_", "MSI_", "IDENTITY_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AZURE_MSI_ENDPOINT", f"{imds.endpoint}/metadata/identity/oauth2/token")
    unkeyed = {"azure.account-name": azurite_server.account, "azure.endpoint": azurite_server.endpoint}
    try:
        io = ObjectStoreFileIO(AzureSettings.resolve(unkeyed))
        for message in _open_and_create_errors(f"az://{container}/t", io):
            assert "no Azure credentials: give the option 'azure.account-key' or 'azure.sas-token' " \
                   "(or set AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN)" in message, message
        assert imds.asked and all("/metadata/identity/" in path for _, path in imds.asked)
    finally:
        imds.stop()
    assert list(azurite_server.store(container).list().collect()) == []  # nothing written
    # with the key, the same store answers (the message is about credentials, not the store)
    keyed = ObjectStoreFileIO(AzureSettings.resolve(azurite_server.options()))
    assert mp.create_table(f"az://{container}/t", SCHEMA, io=keyed).to_arrow().num_rows == 0
