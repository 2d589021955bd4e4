"""Azure Blob Storage and ADLS Gen2 (and the Azurite emulator): paths, settings and clients.

Paths (the URI authority names the container, and for ``abfs``/``abfss`` the account):

| path                                                      | container | account            |
|-----------------------------------------------------------|-----------|--------------------|
| ``az://<container>/<prefix>/<table>``                     | container | from the settings  |
| ``abfss://<container>@<account>.dfs.core.windows.net/...`` | container | ``<account>``      |
| ``abfs://…`` (Hadoop's unencrypted name: the same store)  | container | ``<account>``      |

Settings come from connection options, falling back to the environment:

| option               | environment                                         | default                          |
|----------------------|-----------------------------------------------------|----------------------------------|
| `azure.account-name` | `AZURE_STORAGE_ACCOUNT_NAME` (an abfss path's wins) | required                         |
| `azure.account-key`  | `AZURE_STORAGE_ACCOUNT_KEY`                         | the Azure identity chain         |
| `azure.sas-token`    | `AZURE_STORAGE_SAS_TOKEN`                           |                                  |
| `azure.endpoint`     | `AZURE_STORAGE_ENDPOINT`                            | `https://<account>.blob.<suffix>` |

Credentials are taken as a set: a key or SAS token given as an option is the only credential
used (the environment's are not mixed in; both clients are told which kind to use). With
neither, each client uses the Azure identity chain (a service principal from
``AZURE_CLIENT_ID`` / ``AZURE_CLIENT_SECRET`` / ``AZURE_TENANT_ID``, workload identity,
managed identity; ``AZURE_USE_AZURE_CLI=true`` for an ``az login`` session).

The endpoint is the account's blob service URL, as in an Azure connection string's
``BlobEndpoint``: ``https://<account>.blob.core.windows.net`` (or a private endpoint host
that starts with ``<account>.``), or for an emulator ``http://127.0.0.1:10000/<account>``.
obstore (metadata, the commit point) takes it as is; pyarrow's ``AzureFileSystem`` (data
files) is given the same place as an authority (see :meth:`AzureSettings.make_arrow_fs`).

These are connection settings, never table options: no file, ``repr`` or message of
minipaimon holds a key or a SAS token.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from ..errors import AZURE_CONTAINER, InvalidArgumentError, StorageError, redact_userinfo

PREFIX = "azure."
OPTIONS = ("azure.account-name", "azure.account-key", "azure.sas-token", "azure.endpoint")
SCHEMES = ("az", "abfs", "abfss")
DEFAULT_SUFFIX = "core.windows.net"
_ACCOUNT = re.compile(r"^[a-z0-9]{3,24}$")
_HOST = re.compile(r"^([a-z0-9]{3,24})\.(?:dfs|blob)\.([a-z0-9][a-z0-9.\-]*[a-z0-9])$")
ABFS_FORM = "abfss://<container>@<account>.dfs.core.windows.net/path"
_MANAGED_IDENTITY = "/metadata/identity/"  # the path of the identity chain's last step


@dataclass(frozen=True)
class AzureLocation:
    """What the authority of an Azure path names."""

    container: str
    account: str | None = None  # abfs(s): the account of the host
    suffix: str | None = None  # abfs(s): the host after ``<account>.dfs.`` (core.windows.net)


def parse_authority(scheme: str, authority: str) -> AzureLocation:
    """The container (and for ``abfs``/``abfss`` the account) of a path's authority.

    Raises InvalidArgumentError naming the expected form (never echoing the authority: a
    user:password@ there would be a credential)."""
    if scheme in ("abfs", "abfss"):
        container, at, host = authority.partition("@")
        m = _HOST.match(host.lower())
        if not at or not AZURE_CONTAINER.match(container) or m is None:
            raise InvalidArgumentError(
                f"not a valid {scheme} URI: use {ABFS_FORM} (a container of 3-63 lower-case "
                "letters, digits and hyphens; credentials go in the azure.* options)")
        return AzureLocation(container, m.group(1), m.group(2))
    if not AZURE_CONTAINER.match(authority):
        raise InvalidArgumentError(
            f"not a valid {scheme} URI: use az://<container>/path, a container of 3-63 "
            "lower-case letters, digits and hyphens (credentials go in the azure.* options)")
    return AzureLocation(authority)


@dataclass(frozen=True)
class AzureSettings:
    """Resolved Azure connection settings (implements ``ObjectStoreSettings``)."""

    account: str
    endpoint: str  # the account's blob service URL, no trailing '/'
    account_key: str | None = field(default=None, repr=False)
    sas_token: str | None = field(default=None, repr=False)  # without a leading '?'
    schemes: tuple[str, ...] = SCHEMES

    @classmethod
    def resolve(cls, options: Mapping[str, str] | None = None,
                env: Mapping[str, str] | None = None,
                location: AzureLocation | None = None) -> AzureSettings:
        """Settings from ``azure.*`` options over the environment, for a path whose
        authority is ``location`` (an abfss path names its account).

        Raises InvalidArgumentError, naming the option and never its value: an unknown
        ``azure.*`` option, no account, an account option that differs from the path's, a
        key and a SAS token both given, a key that is not base64, a SAS token without a
        signature, an endpoint that is not an http(s) URL of the account.
        """
        opts = {k.lower(): v for k, v in (options or {}).items() if k.lower().startswith(PREFIX)}
        unknown = sorted(set(opts) - set(OPTIONS))
        if unknown:
            raise InvalidArgumentError(
                f"unknown object-store option(s) {unknown}: the Azure options are {list(OPTIONS)}")
        env = os.environ if env is None else env

        def pick(option: str, variable: str | None) -> str | None:
            value = opts.get(option) or (env.get(variable) if variable else None)
            return value.strip() if value and value.strip() else None

        account = _account(pick("azure.account-name", None), location,
                           pick("azure.account-name", "AZURE_STORAGE_ACCOUNT_NAME"))
        if "azure.account-key" in opts or "azure.sas-token" in opts:
            key, sas = pick("azure.account-key", None), pick("azure.sas-token", None)
        else:
            key = pick("azure.account-key", "AZURE_STORAGE_ACCOUNT_KEY")
            sas = pick("azure.sas-token", "AZURE_STORAGE_SAS_TOKEN") or pick(
                "azure.sas-token", "AZURE_STORAGE_SAS_KEY")
        if key and sas:
            raise InvalidArgumentError(
                "give one of 'azure.account-key' and 'azure.sas-token' (or AZURE_STORAGE_ACCOUNT_KEY "
                "and AZURE_STORAGE_SAS_TOKEN), not both")
        if key is not None:
            try:
                base64.b64decode(key, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidArgumentError(
                    "option 'azure.account-key' (or AZURE_STORAGE_ACCOUNT_KEY) must be the "
                    "account's base64 access key") from None
        if sas is not None:
            sas = sas.removeprefix("?")
            if "sig=" not in sas or any(c in sas for c in " \t\n#"):
                raise InvalidArgumentError(
                    "option 'azure.sas-token' (or AZURE_STORAGE_SAS_TOKEN) must be a shared access "
                    "signature query string (sv=...&sig=...)")
        endpoint = pick("azure.endpoint", "AZURE_STORAGE_ENDPOINT")
        suffix = location.suffix if location and location.suffix else DEFAULT_SUFFIX
        endpoint = _endpoint(endpoint, account) if endpoint else f"https://{account}.blob.{suffix}"
        return cls(account=account, endpoint=endpoint, account_key=key, sas_token=sas)

    # -- ObjectStoreSettings ----------------------------------------------------------------

    def bucket_of(self, authority: str) -> str:
        """The container ``authority`` names; an abfs(s) authority must name this account."""
        scheme = "abfss" if "@" in authority else "az"
        loc = parse_authority(scheme, authority)
        if loc.account is not None and loc.account != self.account:
            raise InvalidArgumentError(
                f"the path names Azure account {loc.account!r}, these settings account "
                f"{self.account!r}: open it with settings of its own account")
        return loc.container

    def make_store(self, bucket: str) -> Any:
        from obstore.store import AzureStore

        config: dict[str, Any] = {"account_name": self.account, "endpoint": self.endpoint,
                                  "use_emulator": False}
        if self.account_key:
            config.update(account_key=self.account_key, credential_type="access_key")
        elif self.sas_token:
            config.update(sas_key=self.sas_token, credential_type="sas_token")
        client = {"allow_http": self.endpoint.startswith("http://"),
                  "connect_timeout": "5s", "timeout": "60s"}
        return AzureStore(bucket, config=config, client_options=client)  # type: ignore[arg-type]

    def arrow_endpoint(self) -> tuple[str, str]:
        """(scheme, authority) of the endpoint as pyarrow's AzureFileSystem takes it: an
        emulator's path-style endpoint (``http://host:port/<account>``) is the authority
        ``host:port``; a host-style one (``https://<account>.<rest>``) the authority
        ``.<rest>`` (pyarrow puts the account in front of an authority starting with '.')."""
        url = urlsplit(self.endpoint)
        host = url.netloc.lower()
        return url.scheme, host if url.path.strip("/") else host[len(self.account):]

    def make_arrow_fs(self) -> pafs.FileSystem:
        """pyarrow's AzureFileSystem at the same endpoint (:meth:`arrow_endpoint`). A SAS
        token is handed over with a leading ``?``: without it pyarrow puts the token into
        the request path (and its error messages)."""
        scheme, authority = self.arrow_endpoint()
        kwargs: dict[str, Any] = {
            "account_name": self.account,
            "blob_storage_authority": authority, "blob_storage_scheme": scheme,
            "dfs_storage_authority": authority, "dfs_storage_scheme": scheme}
        if self.account_key:
            kwargs["account_key"] = self.account_key
        elif self.sas_token:
            kwargs["sas_token"] = "?" + self.sas_token
        azure_fs = getattr(pafs, "AzureFileSystem", None)
        try:
            if azure_fs is None:
                raise TypeError("no AzureFileSystem")
            return azure_fs(**kwargs)  # type: ignore[no-any-return]
        except TypeError:  # pyarrow < 16 has none, < 20 takes no SAS token
            raise StorageError(
                f"data files on Azure need pyarrow's AzureFileSystem (pyarrow >= 16, >= 20 with "
                f"a SAS token); this is pyarrow {pa.__version__}: pip install -U pyarrow") from None

    def describe(self) -> str:
        return redact_userinfo(f"Azure account {self.account} at {self.endpoint}")

    def redact(self, text: str) -> str:
        for secret in (self.account_key, self.sas_token):
            if secret:
                text = text.replace(secret, "***")
        return redact_userinfo(text)

    def identity(self) -> tuple[str, ...]:
        return ("azure", self.endpoint)

    def missing_credentials(self, detail: str) -> str | None:
        # Given no key or SAS token, obstore walks the Azure identity chain, whose last step
        # asks the managed identity endpoint (IMDS, ``/metadata/identity/oauth2/token``). Off
        # Azure that fails (refused, a 400): the user gave no credentials.
        if self.account_key or self.sas_token or _MANAGED_IDENTITY not in detail:
            return None
        return ("no Azure credentials: give the option 'azure.account-key' or 'azure.sas-token' "
                "(or set AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN), or run where the "
                "Azure identity chain finds some (a service principal in AZURE_CLIENT_ID / "
                "AZURE_CLIENT_SECRET / AZURE_TENANT_ID, workload or managed identity); the chain's "
                "last step, asking the managed identity endpoint, failed")


def _account(option: str | None, location: AzureLocation | None, resolved: str | None) -> str:
    """The account: an abfs(s) path's (an account option must agree), else the option's or
    the environment's."""
    if location is not None and location.account is not None:
        if option is not None and option.lower() != location.account:
            raise InvalidArgumentError(
                f"option 'azure.account-name' names another account than the path "
                f"({location.account!r}): leave it out or make them the same")
        return location.account
    if resolved is None:
        raise InvalidArgumentError(
            "no Azure storage account: give option 'azure.account-name' (or set "
            f"AZURE_STORAGE_ACCOUNT_NAME), or use a path {ABFS_FORM}")
    if not _ACCOUNT.match(resolved.lower()):
        raise InvalidArgumentError(
            "option 'azure.account-name' (or AZURE_STORAGE_ACCOUNT_NAME) must be 3-24 "
            "lower-case letters and digits")
    return resolved.lower()


def _endpoint(endpoint: str, account: str) -> str:
    """``endpoint`` checked: an http(s) URL of the account's blob service, path-style
    (``http://host:port/<account>``) or host-style (``https://<account>.<host>``)."""
    if not endpoint.startswith(("http://", "https://")):
        raise InvalidArgumentError(  # never the value: it may be a secret given here
            "option 'azure.endpoint' (or AZURE_STORAGE_ENDPOINT) must be an http:// or https:// URL")
    url = urlsplit(endpoint.rstrip("/"))
    if "@" in url.netloc or url.query or url.fragment or "?" in endpoint:
        raise InvalidArgumentError(
            "option 'azure.endpoint' (or AZURE_STORAGE_ENDPOINT) holds credentials (user:password@ "
            "or a query string): give a SAS token as 'azure.sas-token', a key as "
            "'azure.account-key', and the endpoint without them")
    path = url.path.strip("/")
    host_style = not path and url.netloc.lower().startswith(account + ".")
    if path != account and not host_style:
        raise InvalidArgumentError(
            "option 'azure.endpoint' (or AZURE_STORAGE_ENDPOINT) must be the account's blob "
            "endpoint: https://<account>.blob.core.windows.net (or another host starting with "
            "'<account>.'), or http://host:port/<account> for an emulator such as Azurite")
    return endpoint.rstrip("/")
