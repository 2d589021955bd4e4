"""Path -> FileIO: the one place that decides which storage a table path names.

| path                                            | FileIO              | table root            |
|-------------------------------------------------|---------------------|-----------------------|
| ``/data/t``, ``data/t``                         | :class:`LocalFileIO`| as given              |
| ``file:/data/t``, ``file:///data/t``, ``file://localhost/data/t`` | local | ``/data/t`` (percent-decoded) |
| ``s3://bucket/prefix/t``, ``s3a://…``           | object store (S3)   | as given, no trailing ``/`` |
| ``az://container/prefix/t``, ``abfss://container@account.dfs.core.windows.net/…`` (``abfs://``) | object store (Azure) | as given, no trailing ``/`` |
| any other ``scheme:/…``, ``scheme://…``                       | InvalidArgumentError (never a local directory) |

Connection options (``s3.*``, ``azure.*``) configure the object store. They
are not table options: :func:`split_options` takes them out of the options a caller hands
to ``create_table`` or to the Spark source before anything is written, so credentials never
reach a schema file, a snapshot, the ``options`` system table or a log.

One FileIO is kept per distinct setting, so the clients (and their connection pools) are
shared by every table opened in a process.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from urllib.parse import unquote

from ..errors import InvalidArgumentError
from . import fileio_azure, fileio_s3
from .fileio import FileIO, LocalFileIO
from .fileio_azure import AzureSettings, parse_authority
from .fileio_object import ObjectStoreFileIO
from .fileio_s3 import S3Settings

CONNECTION_PREFIXES = (fileio_s3.PREFIX, fileio_azure.PREFIX)
#: every connection option of every store (what Spark session settings may carry)
CONNECTION_OPTIONS = fileio_s3.OPTIONS + fileio_azure.OPTIONS
S3_SCHEMES = ("s3", "s3a")
OBJECT_STORE_SCHEMES = S3_SCHEMES + fileio_azure.SCHEMES
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):(.*)$", re.DOTALL)

_cache: dict[S3Settings | AzureSettings, ObjectStoreFileIO] = {}
_cache_lock = threading.Lock()


def is_connection_option(name: str) -> bool:
    """True for an option that configures storage access (``s3.*``, ``azure.*``), not the
    table."""
    return name.lower().startswith(CONNECTION_PREFIXES)


def split_options(options: Mapping[str, str] | None) -> tuple[dict[str, str], dict[str, str]]:
    """(connection options, table options) of ``options``."""
    connection: dict[str, str] = {}
    table: dict[str, str] = {}
    for k, v in (options or {}).items():
        (connection if is_connection_option(k) else table)[k] = v
    return connection, table


def scheme_of(path: str) -> str | None:
    """The lower-case URI scheme of ``path``: ``file:…`` or ``<scheme>:/…``. None for a
    plain path (a one-letter "scheme" is a Windows drive; ``a:b`` is a file name)."""
    m = _SCHEME.match(path)
    if m is None:
        return None
    scheme = m.group(1).lower()
    return scheme if scheme == "file" or m.group(2).startswith("/") else None


def normalize_path(path: str) -> str:
    """The table root ``path`` names: ``file:`` URIs become local paths, object-store URIs
    lose a trailing ``/``. Raises InvalidArgumentError for an empty path, an unknown scheme,
    a ``file:`` URI of another host, or an object-store URI without a bucket."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidArgumentError(f"a table path must be a non-empty string, got {path!r}")
    scheme = scheme_of(path)
    if scheme is None:
        return _no_nul(path)
    rest = path[len(scheme) + 1:]
    # what messages show of it: nothing after the scheme if it may hold credentials
    shown = f"{scheme}:..." if "@" in path else path
    if scheme == "file":
        if rest.startswith("//"):
            host, slash, local = rest[2:].partition("/")
            if host not in ("", "localhost"):
                raise InvalidArgumentError(
                    f"{shown!r} names a file on host {host.rpartition('@')[2]!r}: only local file: URIs "
                    "(file:///path or file:/path) are supported"
                )
            rest = slash + local
        if not rest:
            raise InvalidArgumentError(f"{shown!r} names no directory")
        return _no_nul(unquote(rest))
    if scheme in OBJECT_STORE_SCHEMES:
        authority = rest[2:].split("/", 1)[0] if rest.startswith("//") else ""
        if scheme in S3_SCHEMES and (not authority or "@" in authority or ":" in authority):
            raise InvalidArgumentError(  # a bucket name holds neither: credentials, a port?
                f"{shown!r} is not a valid {scheme} URI: use {scheme}://bucket/path/to/table "
                "(credentials go in the s3.* options, never in the path)"
            )
        if scheme in fileio_azure.SCHEMES:
            try:
                parse_authority(scheme, authority)
            except InvalidArgumentError as e:
                raise InvalidArgumentError(f"{shown!r} is {e}") from None
            shown = path  # a valid container@account.host holds no credential
        key = rest[2:].rstrip("/").split("/")[1:]
        if any(seg in ("", ".", "..") for seg in key):
            raise InvalidArgumentError(  # object keys have no relative steps
                f"{shown!r} is not a valid {scheme} URI: a path segment is empty, '.' or '..'")
        return _no_nul(f"{scheme}://{rest[2:].rstrip('/')}")
    raise InvalidArgumentError(
        f"unsupported storage scheme {scheme!r} in table path {shown!r}: use a local path, "
        "file:///path, s3://bucket/path (s3a:// also works), az://container/path or "
        f"{fileio_azure.ABFS_FORM} (abfs:// also works)"
    )


def _no_nul(path: str) -> str:
    if "\x00" in path:  # the OS would raise a bare ValueError ("embedded null byte")
        raise InvalidArgumentError("a table path cannot hold a NUL character")
    return path


def resolve(path: str, options: Mapping[str, str] | None = None,
            io: FileIO | None = None) -> tuple[str, FileIO]:
    """(table root, FileIO) for ``path``. ``options`` may hold connection options (others
    are ignored); an explicit ``io`` is used as is (the path is still checked).

    Raises InvalidArgumentError for a path or connection option that is not acceptable.
    """
    root = normalize_path(path)
    if io is not None:
        return root, io
    scheme = scheme_of(root)
    if scheme in S3_SCHEMES:
        return root, object_store_io(S3Settings.resolve(split_options(options)[0]))
    if scheme in fileio_azure.SCHEMES:
        location = parse_authority(scheme, root.split("://", 1)[1].split("/", 1)[0])
        return root, object_store_io(AzureSettings.resolve(split_options(options)[0], location=location))
    return root, LocalFileIO()


def object_store_io(settings: S3Settings | AzureSettings) -> ObjectStoreFileIO:
    """The process-wide FileIO for ``settings``."""
    with _cache_lock:
        io = _cache.get(settings)
        if io is None:
            io = _cache[settings] = ObjectStoreFileIO(settings)
        return io
