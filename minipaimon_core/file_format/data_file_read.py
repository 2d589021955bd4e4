"""Reading data files: one whole, or table by table in bounded memory, with the checks that
tell a damaged or replaced file (size, rows, embedded name) from a failing store.

Re-exported by :mod:`.data_file`, the module that owns data files.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence

import pyarrow as pa

from .. import file_format
from ..errors import CorruptDataFileError, StorageError, redact_userinfo
from ..format.layout import TableLayout
from ..format.manifest_file import DataFileMeta
from ..io.fileio import FileIO


def read_data_file(
    io: FileIO, layout: TableLayout, partition_path: str, bucket: int, file: DataFileMeta,
    columns: Sequence[str] | None = None, declared: pa.Schema | None = None,
    dictionary: Collection[str] = (),
) -> pa.Table:
    """Read the named ``columns`` (all if None) of one data file, in the format its name
    says; ``declared``: the file's Arrow layout (:func:`file_schema` of its schema), the
    types a format that stores them otherwise (ORC, Avro) converts back to; ``dictionary``:
    string/binary columns that may come as Arrow dictionaries (``FileFormat.read``).

    A read that fails is told apart by reading the whole file again: if the store cannot
    give it, the store failed (a 5xx, a dropped connection, EIO): StorageError, retryable;
    if it gives the file and it reads, the first failure was transient; if it gives the
    file and it does not read, the file is damaged.

    Raises:
        CorruptDataFileError: the file is missing (a caller whose snapshot expired
            meanwhile says so, see read.SplitReader), is not the one its metadata describes
            (size, rows, embedded name), is not readable in its format, fails a checksum or
            lacks a column it should hold.
        StorageError: the store failed while reading it.
        UnsupportedFeatureError: it holds values minipaimon's decoder of its format cannot
            read (ORC timestamps beyond 2262).
    """
    path = layout.data_file_path(partition_path, bucket, file.fileName)
    fmt = file_format.of_file(file.fileName, path)
    names = list(columns) if columns is not None else None
    try:
        with io.open_input(path) as f:
            size = f.seek(0, 2)
            if size != file.fileSize:
                raise _replaced(path, size, file)
            f.seek(0)
            t, named = fmt.read(f, names, declared, dictionary)
    except FileNotFoundError:
        raise missing_data_file(path) from None
    except (pa.ArrowException, OSError, ValueError, KeyError, IndexError, EOFError, TypeError) as e:
        t, named = _read_whole(io, path, file, fmt, names, declared, e, dictionary)
    _check_rows(path, file, t.num_rows, named)
    return t


#: rows of the tables :func:`iter_data_file` yields unless told otherwise
BATCH_ROWS = 65_536


def iter_data_file(
    io: FileIO, layout: TableLayout, partition_path: str, bucket: int, file: DataFileMeta,
    columns: Sequence[str] | None = None, declared: pa.Schema | None = None,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pa.Table]:
    """:func:`read_data_file` as consecutive tables of at most ``batch_rows`` rows, each
    decoded when it is taken (a Parquet file holds one row group's compressed bytes and one
    table in memory; other formats the file). The same checks, the same errors: the size
    before the first table, the embedded name and the row count the format states before
    the first table, the rows counted after the last. A read that fails part way is told
    apart as :func:`read_data_file` does, by reading the whole file again; if that reads,
    the rest of its rows come from it."""
    path = layout.data_file_path(partition_path, bucket, file.fileName)
    fmt = file_format.of_file(file.fileName, path)
    names = list(columns) if columns is not None else None
    done = 0
    try:
        with io.open_input(path) as f:
            size = f.seek(0, 2)
            if size != file.fileSize:
                raise _replaced(path, size, file)
            f.seek(0)
            tables, named, rows = fmt.read_batches(f, names, declared, batch_rows)
            _check_rows(path, file, rows, named)
            for t in tables:
                done += t.num_rows
                yield t
        _check_rows(path, file, done, None)
        return
    except FileNotFoundError:
        raise missing_data_file(path) from None
    except (pa.ArrowException, OSError, ValueError, KeyError, IndexError, EOFError, TypeError) as e:
        whole, named = _read_whole(io, path, file, fmt, names, declared, e, ())
    _check_rows(path, file, whole.num_rows, named)
    for start in range(done, whole.num_rows, batch_rows):
        yield whole.slice(start, batch_rows)


def _check_rows(path: str, file: DataFileMeta, rows: int, named: bytes | None) -> None:
    """CorruptDataFileError unless a file holds the rows and embedded name its manifest says."""
    if rows != file.rowCount or (named is not None and named != file.fileName.encode()):
        raise CorruptDataFileError(
            f"data file {path} holds {rows} rows (file {named!r}), its manifest says "
            f"{file.rowCount}: the file was replaced; restore it or roll the table back to a "
            "snapshot without it")


def missing_data_file(path: str) -> CorruptDataFileError:
    return CorruptDataFileError(
        f"data file {path} is missing: it was deleted outside minipaimon (or the snapshot read "
        "was expired or rolled back meanwhile: then re-plan the read); restore it or roll the "
        "table back to a snapshot without it")


def _replaced(path: str, size: int, file: DataFileMeta) -> CorruptDataFileError:
    return CorruptDataFileError(
        f"data file {path} has {size} bytes, its manifest says {file.fileSize}: the file "
        "was truncated or replaced; restore it or roll the table back to a snapshot without it")


def _read_whole(io: FileIO, path: str, file: DataFileMeta, fmt: file_format.FileFormat,
                names: list[str] | None, declared: pa.Schema | None,
                first: BaseException, dictionary: Collection[str]) -> tuple[pa.Table, bytes | None]:
    """The second read of a file whose streamed read failed with ``first`` (see
    :func:`read_data_file`): the whole file, then its format's decoder."""
    try:
        data = io.read_bytes(path)
    except FileNotFoundError:
        raise missing_data_file(path) from None
    except OSError as e:  # StorageError included: the store cannot give the file
        raise e if isinstance(e, StorageError) else StorageError(redact_userinfo(
            f"reading data file {path} failed ({type(e).__name__}: {e}); retry when the store "
            "answers again")) from e
    if len(data) != file.fileSize:
        raise _replaced(path, len(data), file) from first
    try:
        return fmt.read(pa.BufferReader(data), names, declared, dictionary)
    except (pa.ArrowException, OSError, ValueError, KeyError, IndexError, EOFError, TypeError) as e:
        raise CorruptDataFileError(
            f"data file {path} is damaged ({type(e).__name__}: {e}); restore it or roll the "
            "table back to a snapshot without it") from e
