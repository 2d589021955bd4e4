"""Azure Blob Storage / ADLS Gen2: paths, settings, and tables on Azurite (127.0.0.1).

The storage-parametrised tests of the suite (``storage``, ``storage_all``, ``object_storage``,
``race_storage`` in tests/conftest.py) run on Azurite too; this file holds what is Azure's
own: az:// and abfss:// paths, the azure.* options and their environment, SAS tokens, and
the failures a user meets first (a wrong key, an unreachable endpoint, a missing container).
"""

from __future__ import annotations

import logging

import pytest

import minipaimon_core as mp
from minipaimon_core.io.fileio_azure import AzureSettings, parse_authority
from minipaimon_core.io.fileio_object import ObjectStoreFileIO
from minipaimon_core.io.fileio_resolve import normalize_path, resolve, split_options
from tests.azurite import AzuriteServer
from tests.helpers import SCHEMA, rows, sorted_ids
from tests.s3_servers import refused_port

KEY = "c2VjcmV0LWtleS1vZi10aGUtYWNjb3VudA=="  # base64, like an account key
SAS = "sv=2021-08-06&ss=b&srt=sco&sp=rwdlac&se=2099-01-01T00%3A00%3A00Z&sig=S3CRETsig%2Babc%3D"
ABFSS = "abfss://lake@acct1.dfs.core.windows.net"

# -- paths ----------------------------------------------------------------------------------


@pytest.mark.parametrize("given, root", [
    ("az://lake/wh/t/", "az://lake/wh/t"),
    ("AZ://lake/t", "az://lake/t"),
    (f"{ABFSS}/wh/t/", f"{ABFSS}/wh/t"),
    ("abfs://lake@acct1.dfs.core.windows.net/t", "abfs://lake@acct1.dfs.core.windows.net/t"),
    ("abfss://lake@acct1.blob.core.chinacloudapi.cn/t", "abfss://lake@acct1.blob.core.chinacloudapi.cn/t"),
])
def test_azure_paths_normalise_to_a_table_root(given: str, root: str) -> None:
    assert normalize_path(given) == root


@pytest.mark.parametrize("bad", [
    "az://", "az:///t", "az://ab/t", "az://Lake/t", "az://la_ke/t", "az://lake//t", "az://lake/../t",
    "abfss://lake/t", "abfss://lake@acct1/t", "abfss://lake@acct1.example.com/t",
    "abfss://LAKE@acct1.dfs.core.windows.net/t", "abfss://@acct1.dfs.core.windows.net/t",
])
def test_malformed_azure_paths_are_refused(bad: str) -> None:
    with pytest.raises(mp.InvalidArgumentError, match=r"az://<container>|abfss://<container>@|segment"):
        normalize_path(bad)


def test_credentials_in_an_azure_path_are_refused_and_not_echoed() -> None:
    for path in (f"abfss://user:{KEY}@acct1.dfs.core.windows.net/t", f"az://{KEY}@lake/t"):
        with pytest.raises(mp.InvalidArgumentError, match="azure") as err:
            resolve(path, {"azure.account-name": "acct1"})
        assert KEY not in str(err.value) and "secret" not in str(err.value)


def test_an_abfss_path_names_its_account_and_messages_show_its_container() -> None:
    root, io = resolve(f"{ABFSS}/wh/t", {"azure.account-key": KEY})
    assert isinstance(io, ObjectStoreFileIO) and io.settings.account == "acct1"
    assert io.settings.endpoint == "https://acct1.blob.core.windows.net"
    assert io.split(f"{ABFSS}/wh/t/snapshot/LATEST") == ("lake", "wh/t/snapshot/LATEST")
    assert "lake@acct1" in io.settings.redact(f"reading {root} failed")
    china = resolve("abfss://lake@acct1.dfs.core.chinacloudapi.cn/t", {})[1]
    assert china.settings.endpoint == "https://acct1.blob.core.chinacloudapi.cn"
    with pytest.raises(mp.InvalidArgumentError, match="another account"):
        resolve(f"{ABFSS}/t", {"azure.account-name": "other"})
    with pytest.raises(mp.InvalidArgumentError, match="open it with settings of its own account"):
        io.split("abfss://lake@other.dfs.core.windows.net/t")


def test_azure_paths_get_an_object_store_io_shared_per_setting() -> None:
    opts = {"azure.account-name": "acct1", "azure.account-key": KEY}
    root, io = resolve("az://lake/t/", opts)
    assert root == "az://lake/t" and resolve("az://other/u", dict(opts))[1] is io
    assert resolve(f"{ABFSS}/t", {"azure.account-key": KEY})[1] is io  # the same account
    assert resolve("az://lake/t", {**opts, "azure.endpoint": "http://127.0.0.1:1/acct1"})[1] is not io


def test_azure_options_are_connection_options() -> None:
    conn, table = split_options({"Azure.Account-Key": KEY, "bucket": "2", "azure.endpoint": "x"})
    assert conn == {"Azure.Account-Key": KEY, "azure.endpoint": "x"} and table == {"bucket": "2"}


# -- settings -------------------------------------------------------------------------------

ENV = {"AZURE_STORAGE_ACCOUNT_NAME": "envacct", "AZURE_STORAGE_ACCOUNT_KEY": KEY,
       "AZURE_STORAGE_ENDPOINT": "http://127.0.0.1:10000/envacct"}


def test_settings_fall_back_to_the_azure_environment() -> None:
    s = AzureSettings.resolve({}, ENV)
    assert (s.account, s.account_key, s.sas_token, s.endpoint) == (
        "envacct", KEY, None, "http://127.0.0.1:10000/envacct")
    s = AzureSettings.resolve({}, {"AZURE_STORAGE_ACCOUNT_NAME": "envacct", "AZURE_STORAGE_SAS_TOKEN": "?" + SAS})
    assert (s.account_key, s.sas_token, s.endpoint) == (None, SAS, "https://envacct.blob.core.windows.net")
    s = AzureSettings.resolve({}, {"AZURE_STORAGE_ACCOUNT_NAME": "envacct"})  # the identity chain
    assert s.account_key is None and s.sas_token is None


def test_options_win_and_credentials_are_one_set() -> None:
    s = AzureSettings.resolve({"azure.account-name": "optacct", "azure.sas-token": SAS,
                               "azure.endpoint": "http://127.0.0.1:10000/optacct"}, ENV)
    assert (s.account, s.account_key, s.sas_token) == ("optacct", None, SAS)  # not the env's key
    with pytest.raises(mp.InvalidArgumentError, match="AZURE_STORAGE_ENDPOINT"):  # another account's
        AzureSettings.resolve({"azure.account-name": "optacct"}, ENV)
    s = AzureSettings.resolve({"azure.account-key": KEY}, {**ENV, "AZURE_STORAGE_SAS_TOKEN": SAS})
    assert (s.account_key, s.sas_token) == (KEY, None)


@pytest.mark.parametrize("opts, match", [
    ({}, "azure.account-name"),
    ({"azure.account-name": "Bad_Name!"}, "azure.account-name"),
    ({"azure.account-name": "acct1", "azure.account-key": KEY, "azure.sas-token": SAS}, "not both"),
    ({"azure.account-name": "acct1", "azure.account-key": "not base64 !"}, "azure.account-key"),
    ({"azure.account-name": "acct1", "azure.sas-token": "sv=2021-08-06&sp=r"}, "azure.sas-token"),
    ({"azure.account-name": "acct1", "azure.endpoint": "127.0.0.1:10000/acct1"}, "azure.endpoint"),
    ({"azure.account-name": "acct1", "azure.endpoint": "http://127.0.0.1:10000/other"}, "azure.endpoint"),
    ({"azure.account-name": "acct1", "azure.endpoint": f"https://acct1.blob.core.windows.net/?{SAS}"},
     "azure.sas-token"),
    ({"azure.account-name": "acct1", "azure.endpoint": f"http://u:{KEY}@127.0.0.1:1/acct1"}, "credentials"),
    ({"azure.account-name": "acct1", "azure.acount-key": KEY}, "unknown object-store option"),
])
def test_bad_settings_are_refused_by_name_without_echoing_a_value(opts: dict[str, str], match: str) -> None:
    with pytest.raises(mp.InvalidArgumentError, match=match) as err:
        AzureSettings.resolve(opts, {})
    for value in opts.values():
        if value != "acct1":
            assert value not in str(err.value)
    assert "S3CRET" not in str(err.value) and KEY not in str(err.value)


def test_settings_never_show_a_secret() -> None:
    for s in (AzureSettings.resolve({"azure.account-name": "acct1", "azure.account-key": KEY}, {}),
              AzureSettings.resolve({"azure.account-name": "acct1", "azure.sas-token": SAS}, {})):
        text = repr(s) + s.describe() + repr(ObjectStoreFileIO(s)) + s.redact(f"{s.account_key} {s.sas_token}")
        assert KEY not in text and "S3CRET" not in text
    assert "S3CRET" not in mp.errors.redact_userinfo(f"GET https://acct1.blob.core.windows.net/c/x?{SAS}")


@pytest.mark.parametrize("endpoint, arrow", [
    ("https://acct1.blob.core.windows.net", ("https", ".blob.core.windows.net")),
    ("https://acct1.privatelink.blob.core.windows.net/", ("https", ".privatelink.blob.core.windows.net")),
    ("http://127.0.0.1:10000/acct1", ("http", "127.0.0.1:10000")),
])
def test_the_endpoint_reaches_pyarrow_as_the_same_place(endpoint: str, arrow: tuple[str, str]) -> None:
    s = AzureSettings.resolve({"azure.account-name": "acct1", "azure.endpoint": endpoint}, {})
    assert s.endpoint == endpoint.rstrip("/") and s.arrow_endpoint() == arrow


# -- tables on Azurite ----------------------------------------------------------------------


def _only(server: AzuriteServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """No Azure setting from the environment: what a test passes is all there is."""
    for name in ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ENDPOINT",
                 "AZURE_STORAGE_SAS_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_a_table_on_an_abfss_path_and_a_catalog_on_azurite(azurite_server, monkeypatch) -> None:
    _only(azurite_server, monkeypatch)
    container = azurite_server.create_container()
    opts = {"azure.account-key": azurite_server.key, "azure.endpoint": azurite_server.endpoint}
    path = f"abfss://{container}@{azurite_server.account}.dfs.core.windows.net/wh/t"
    t = mp.create_table(path, SCHEMA, primary_key=["id"], options={**opts, "bucket": "2"})
    t.write(rows(0, 5))
    t = mp.open_table(path, options=opts)
    assert t.path == path and sorted_ids(t.to_arrow()) == list(range(5))
    assert sorted_ids(mp.open_table(f"az://{container}/wh/t", options={
        **opts, "azure.account-name": azurite_server.account}).to_arrow()) == list(range(5))
    cat = mp.catalog(f"abfss://{container}@{azurite_server.account}.dfs.core.windows.net/cat", options=opts)
    cat.create_table("db.orders", SCHEMA).write(rows(0, 3))
    assert cat.list_tables("db") == ["orders"]
    cat.drop_table("db.orders")
    assert cat.list_tables("db") == []


def test_a_sas_token_is_used_and_never_written_or_shown(azurite_server, monkeypatch, caplog) -> None:
    """A table written with a container SAS holds no part of it in any object; a SAS
    without write permission fails the write with a StorageError that shows no signature
    (pyarrow's error carries the request URL, query and all) and commits nothing."""
    _only(azurite_server, monkeypatch)
    container = azurite_server.create_container()
    sas = azurite_server.sas_token(container)
    sig = sas.rsplit("sig=", 1)[1]
    opts = {"azure.account-name": azurite_server.account, "azure.endpoint": azurite_server.endpoint,
            "azure.sas-token": "?" + sas}
    path = f"az://{container}/t"
    with caplog.at_level(logging.DEBUG):
        t = mp.create_table(path, SCHEMA, primary_key=["id"], options={**opts, "bucket": "2"})
        for i in range(3):
            t.write(rows(i * 4, 6))
        t.compact(full=True)
        assert sorted_ids(mp.open_table(path, options=opts).to_arrow()) == list(range(14))
        files = _objects(azurite_server, container)
        assert any("/snapshot/snapshot-" in p for p in files)
        for p, body in files.items():
            assert sig.encode() not in body and b"sig=" not in body, p
        read_only = {**opts, "azure.sas-token": azurite_server.sas_token(container, "rl")}
        with pytest.raises(mp.StorageError, match="data-") as err:
            mp.open_table(path, options=read_only).write(rows(100, 1))
        assert "sig=***" in str(err.value) and read_only["azure.sas-token"].rsplit("sig=", 1)[1] not in str(err.value)
        assert sorted_ids(mp.open_table(path, options=opts).to_arrow()) == list(range(14))
        wrong = {**opts, "azure.sas-token": sas.replace("sig=", "sig=wrong")}
        with pytest.raises(mp.StorageError) as err:
            mp.open_table(path, options=wrong)
        assert "wrong" not in str(err.value) and sig not in str(err.value)
    assert sig not in caplog.text


@pytest.mark.timeout(30)
def test_a_wrong_key_is_a_storage_error_at_once(azurite_server, monkeypatch) -> None:
    _only(azurite_server, monkeypatch)
    container = azurite_server.create_container()
    path = f"az://{container}/t"
    mp.create_table(path, SCHEMA, options=azurite_server.options()).write(rows(0, 3))
    wrong = {**azurite_server.options(), "azure.account-key": "d3Jvbmcta2V5LTQ1Ng=="}
    with pytest.raises(mp.StorageError, match="403") as err:
        mp.open_table(path, options=wrong)
    assert "d3Jvbmcta2V5LTQ1Ng==" not in str(err.value)
    with pytest.raises(mp.StorageError, match="403"):
        mp.create_table(f"az://{container}/u", SCHEMA, options=wrong)
    assert sorted(mp.catalog(f"az://{container}", options=azurite_server.options()).io.list_names(
        f"az://{container}")) == ["t"]  # nothing created


@pytest.mark.timeout(30)
def test_an_unreachable_endpoint_is_a_storage_error_within_seconds(monkeypatch) -> None:
    """Nothing listens on the port: the client's retries end in seconds with a typed
    error (open, create, and a write through a table opened before the store went away)."""
    for name in ("AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with refused_port() as port:
        opts = {"azure.account-name": "devstoreaccount1", "azure.account-key": KEY,
                "azure.endpoint": f"http://127.0.0.1:{port}/devstoreaccount1"}
        with pytest.raises(mp.StorageError, match="devstoreaccount1"):
            mp.open_table("az://lake/t", options=opts)
        with pytest.raises(mp.StorageError):
            mp.create_table("az://lake/t", SCHEMA, options=opts)


def test_a_missing_container_is_a_storage_error_naming_it(azurite_server, monkeypatch) -> None:
    _only(azurite_server, monkeypatch)
    for call in (lambda: mp.create_table("az://no-such-container/t", SCHEMA, options=azurite_server.options()),
                 lambda: mp.open_table("az://no-such-container/t", options=azurite_server.options())):
        with pytest.raises(mp.StorageError, match="container 'no-such-container' does not exist"):
            call()


def _objects(server: AzuriteServer, container: str) -> dict[str, bytes]:
    import obstore

    store = server.store(container)
    return {o["path"]: bytes(obstore.get(store, o["path"]).bytes())
            for chunk in obstore.list(store) for o in chunk}


def test_parse_authority_names_the_container_and_account() -> None:
    assert parse_authority("az", "lake").account is None
    loc = parse_authority("abfss", "lake@acct1.dfs.core.windows.net")
    assert (loc.container, loc.account, loc.suffix) == ("lake", "acct1", "core.windows.net")


def test_a_pyarrow_without_azure_support_is_a_storage_error_naming_the_fix(monkeypatch) -> None:
    import pyarrow.fs as pafs

    settings = AzureSettings.resolve({"azure.account-name": "acct1", "azure.account-key": KEY}, {})
    monkeypatch.delattr(pafs, "AzureFileSystem")  # what pyarrow < 16 is like
    with pytest.raises(mp.StorageError, match=r"pyarrow >= 16.*pip install -U pyarrow") as err:
        ObjectStoreFileIO(settings).open_input("az://lake/t/bucket-0/data-1.parquet")
    assert KEY not in str(err.value)
