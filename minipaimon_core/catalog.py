"""A warehouse catalog: namespaces of tables under one root, local or on object storage.

```
<warehouse>/
  <namespace>.db/NAMESPACE          marker of a namespace created empty (object stores
                                     have no empty directories); a namespace also exists
                                     while it holds anything
  <namespace>.db/<table>/           a table (its schema/ directory makes it one)
```

This is Paimon's filesystem-catalog layout (``<db>.db/<table>``), so a table's path is
``catalog.table_path("db.orders")`` and every tool that takes a path can open it.
Identifiers are ``namespace.table``; both parts are 1-100 letters, digits or ``_``.

```python
cat = mp.catalog("s3://lake/warehouse", options={"s3.endpoint": ...})
t = cat.create_table("sales.orders", schema, primary_key=["id"])
cat.list_tables("sales"); cat.table("sales.orders"); cat.drop_table("sales.orders")
```
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from .errors import InvalidArgumentError, StorageError, TableAlreadyExistsError, TableNotFoundError
from .format.layout import TableLayout
from .io.fileio import LocalFileIO
from .io.fileio_resolve import resolve, split_options
from .schema.schema import SchemaManager
from .table import Table, create_table, open_table

NAMESPACE_MARKER = "NAMESPACE"
NAMESPACE_SUFFIX = ".db"
_PART = re.compile(r"[A-Za-z0-9_]{1,100}")  # always fullmatch ("$" also matches before "\n")
_IDENTIFIER = re.compile(r"[A-Za-z0-9_]{1,100}\.[A-Za-z0-9_]{1,100}")
_DELETE_ATTEMPTS = 5


def catalog(warehouse: str, options: Mapping[str, str] | None = None) -> Catalog:
    """The catalog of tables under ``warehouse`` (a local path, ``file:``, ``s3://``, ``az://`` or ``abfss://`` URI;
    connection options such as ``s3.endpoint`` or ``azure.account-name`` in ``options``)."""
    return Catalog(warehouse, options)


class Catalog:
    """Namespaces and tables of one warehouse. Holds no state beyond the root: every call
    reads the store, so several processes may share a warehouse."""

    def __init__(self, warehouse: str, options: Mapping[str, str] | None = None) -> None:
        connection, rest = split_options(options)
        if rest:
            raise InvalidArgumentError(
                f"catalog options are connection options (s3.*, azure.*); got {sorted(rest)}")
        self.warehouse, self.io = resolve(warehouse, connection)

    # -- names -----------------------------------------------------------------------------

    def namespace_path(self, namespace: str) -> str:
        return f"{self.warehouse.rstrip('/')}/{_check('namespace', namespace)}{NAMESPACE_SUFFIX}"

    def table_path(self, identifier: str) -> str:
        namespace, name = parse_identifier(identifier)
        return f"{self.namespace_path(namespace)}/{name}"

    # -- namespaces ------------------------------------------------------------------------

    def create_namespace(self, namespace: str, exist_ok: bool = False) -> None:
        """Raises InvalidArgumentError if it exists (unless ``exist_ok``) or the name is bad."""
        marker = f"{self.namespace_path(namespace)}/{NAMESPACE_MARKER}"
        if not self.io.write_if_absent(marker, b"{}") and not exist_ok:
            raise InvalidArgumentError(f"namespace {namespace!r} already exists in {self.warehouse}")

    def list_namespaces(self) -> list[str]:
        names = [n[: -len(NAMESPACE_SUFFIX)] for n in self.io.list_names(self.warehouse)
                 if n.endswith(NAMESPACE_SUFFIX)]
        return sorted(n for n in names if self._namespace_exists(n))

    def drop_namespace(self, namespace: str) -> None:
        """Drop an empty namespace. Raises InvalidArgumentError if it still has tables,
        TableNotFoundError if it does not exist."""
        self._require_namespace(namespace)
        tables = self.list_tables(namespace)
        if tables:
            raise InvalidArgumentError(
                f"namespace {namespace!r} still has tables {tables[:10]}: drop them first")
        self.io.delete_tree(self.namespace_path(namespace))

    # -- tables ----------------------------------------------------------------------------

    def create_table(self, identifier: str, schema: pa.Schema, primary_key: list[str] | None = None,
                     partition_by: list[str] | None = None,
                     options: dict[str, str] | None = None) -> Table:
        """Create ``namespace.table`` (the namespace too, if new). Raises
        TableAlreadyExistsError and create_table's errors."""
        namespace, _ = parse_identifier(identifier)
        self.create_namespace(namespace, exist_ok=True)
        return create_table(self.table_path(identifier), schema, primary_key, partition_by,
                            options, io=self.io)

    def table(self, identifier: str) -> Table:
        """Open ``namespace.table``. Raises TableNotFoundError."""
        return open_table(self.table_path(identifier), io=self.io)

    def table_exists(self, identifier: str) -> bool:
        return self._is_table(self.table_path(identifier))

    def list_tables(self, namespace: str) -> list[str]:
        """Table names (without the namespace) of ``namespace``, sorted. Raises
        TableNotFoundError for a namespace that does not exist."""
        self._require_namespace(namespace)
        base = self.namespace_path(namespace)
        return sorted(n for n in self.io.list_names(base)
                      if _PART.fullmatch(n) and self._is_table(f"{base}/{n}"))

    def drop_table(self, identifier: str, purge: bool = True) -> int:
        """Drop ``namespace.table``; returns the number of files deleted.

        ``purge=True`` deletes every file of the table. ``purge=False`` deletes only its
        metadata (schemas, snapshots, manifests, index files, tags, consumers), so it is no
        longer a table, and leaves its data files for you to archive or delete. The schema
        goes last: until then the path is still a (broken) table, and a new table is never
        created on metadata left over (see :func:`minipaimon_core.table.create_table`).
        Dropping again finishes a drop that failed half-way.

        Raises:
            TableNotFoundError: no table (nor leftovers of one) is there.
            StorageError: files kept appearing while deleting (a writer still writes to
                the table): stop the writers and drop again.
        """
        path = self.table_path(identifier)
        layout = TableLayout(path)
        if not self._is_table(path) and not SchemaManager(self.io, layout).leftovers():
            raise TableNotFoundError(f"no table {identifier!r} in {self.warehouse}")
        dirs = (layout.snapshot_dir, layout.manifest_dir, layout.index_dir, layout.tag_dir,
                layout.consumer_dir, layout.schema_dir)
        count = sum(self._delete_tree(d) for d in dirs)
        return count + self._delete_tree(path) if purge else count

    def _delete_tree(self, directory: str) -> int:
        """Delete ``directory``, again while files appear in it meanwhile (a writer)."""
        count = 0
        for _ in range(_DELETE_ATTEMPTS):
            try:
                count += self.io.delete_tree(directory)
            except FileNotFoundError:
                continue  # gone under us: look again
            except OSError as e:
                if isinstance(e, StorageError):
                    raise
                continue  # e.g. "Directory not empty": a file was created meanwhile
            if not self.io.list_names(directory):
                return count
        raise StorageError(
            f"could not delete {directory}: files kept appearing in it (a writer still writes "
            "to the dropped table?); stop the writers and drop the table again")

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Rename within the warehouse. Local disk only: an object store has no rename
        (copying every file is not an atomic rename). Raises TableNotFoundError,
        TableAlreadyExistsError, InvalidArgumentError."""
        src, dst = self.table_path(identifier), self.table_path(new_identifier)
        if not self._is_table(src):
            raise TableNotFoundError(f"no table {identifier!r} in {self.warehouse}")
        if self._is_table(dst) or self.io.list_names(dst):
            raise TableAlreadyExistsError(f"{new_identifier!r} already exists in {self.warehouse}")
        if not isinstance(self.io, LocalFileIO):
            raise InvalidArgumentError(
                f"rename_table is not supported on {self.warehouse}: object stores have no "
                "atomic rename; create the new table and copy the data instead")
        self.create_namespace(parse_identifier(new_identifier)[0], exist_ok=True)
        try:
            self.io.rename_directory(src, dst)
        except FileNotFoundError:  # renamed or dropped meanwhile
            raise TableNotFoundError(f"no table {identifier!r} in {self.warehouse} (it was "
                                     "renamed or dropped meanwhile)") from None
        except OSError as e:  # the target appeared meanwhile (ENOTEMPTY / EEXIST)
            if self.io.list_names(dst):
                raise TableAlreadyExistsError(
                    f"{new_identifier!r} already exists in {self.warehouse}") from None
            raise StorageError(f"renaming {identifier!r} to {new_identifier!r} failed: "
                               f"{e.strerror or e}") from None

    # -- internals -------------------------------------------------------------------------

    def _namespace_exists(self, namespace: str) -> bool:
        """Its marker exists, or anything under it (a table created by path, e.g. by a
        Spark write to ``namespace.table``, creates no marker)."""
        path = self.namespace_path(namespace)
        return self.io.exists(f"{path}/{NAMESPACE_MARKER}") or bool(self.io.list_names(path))

    def _require_namespace(self, namespace: str) -> None:
        if not self._namespace_exists(namespace):
            raise TableNotFoundError(f"no namespace {namespace!r} in {self.warehouse}")

    def _is_table(self, path: str) -> bool:
        return bool(self.io.list_names(TableLayout(path).schema_dir))


WAREHOUSE_ENV = "MINIPAIMON_WAREHOUSE"


def table_location(name: str, warehouse: str | None = None,
                   options: Mapping[str, str] | None = None) -> str:
    """The path of the table ``name``: a ``namespace.table`` identifier in ``warehouse``
    (default: the ``MINIPAIMON_WAREHOUSE`` environment variable), or ``name`` itself (a
    path) when no warehouse is set or ``name`` is not an identifier."""
    warehouse = warehouse or os.environ.get(WAREHOUSE_ENV)
    if warehouse and _IDENTIFIER.fullmatch(name):
        return Catalog(warehouse, split_options(options)[0]).table_path(name)
    return name


def parse_identifier(identifier: Any) -> tuple[str, str]:
    """``"namespace.table"`` -> (namespace, table). Raises InvalidArgumentError."""
    if not isinstance(identifier, str) or identifier.count(".") != 1:
        raise InvalidArgumentError(
            f"a table identifier is 'namespace.table', got {identifier!r}")
    namespace, name = identifier.split(".")
    return _check("namespace", namespace), _check("table", name)


def _check(kind: str, name: str) -> str:
    if not isinstance(name, str) or not _PART.fullmatch(name):
        raise InvalidArgumentError(
            f"invalid {kind} name {name!r}: use 1-100 letters, digits or '_'")
    return name

