"""Data-file formats: how a data or changelog file's rows are encoded (Parquet, ORC, Avro).

Paimon writes a table's data files in the table's ``file.format`` (``parquet`` by default
since Paimon 0.9, ``orc`` in schemas before version 3, ``avro``), and a table whose format
was changed holds files of several formats: each file is read by its own format, named by
its extension (``data-<uuid>-<k>.parquet`` / ``.orc`` / ``.avro``), never by the table's
current option. One module per format; each turns Arrow tables of a data file's layout
(:func:`minipaimon_core.file_format.data_file.file_schema`) into its bytes and back:

* :meth:`FileFormat.open_writer` writes consecutive tables of one Arrow schema;
* :meth:`FileFormat.read` reads named columns into the Arrow types the file's schema
  declares (a format that stores a type otherwise, ORC's nanosecond timestamps or Avro's
  longs, converts back), with the file name the writer embedded, if any;
* :meth:`FileFormat.copy` copies a file under a new name (a restore's copies): byte for
  byte but for the name minipaimon's writer embeds.

Also owned here: data files (:mod:`.data_file`: writing one, whole or part by part, its
stats; :mod:`.data_file_read`: reading one, whole or table by table) and
their file indexes (:mod:`.file_index`). May import: ``errors``, ``format/``, ``io/``,
``expressions/`` (layer order: docs/format.md, "Code layout").
"""

from __future__ import annotations

from ..errors import CorruptDataFileError, UnsupportedFeatureError
from ..format.table_schema import TableSchema
from .avro import AvroFormat
from .base import FILE_NAME_KEY, FileFormat, FormatWriter, conform
from .orc import OrcFormat
from .parquet import ParquetFormat, dictionary_columns

NAMES = ("parquet", "orc", "avro")
FORMATS: dict[str, FileFormat] = {f.name: f for f in (ParquetFormat(), OrcFormat(), AvroFormat())}


def by_name(name: str) -> FileFormat:
    """The format ``file.format`` = ``name`` names. Raises UnsupportedFeatureError."""
    fmt = FORMATS.get(name.strip().lower())
    if fmt is None:
        raise UnsupportedFeatureError(
            f"data file format {name!r} ('file.format'): minipaimon reads and writes "
            f"{', '.join(NAMES)}")
    return fmt


def extension_of(file_name: str) -> str:
    """A file name's extension, lower case ('' if none): the format it names, unchecked."""
    return file_name.rsplit(".", 1)[-1].lower() if "." in file_name else ""


def of_file(file_name: str, path: str = "") -> FileFormat:
    """The format of a data or changelog file, by its extension. Raises
    CorruptDataFileError for a name of no known format."""
    ext = extension_of(file_name)
    fmt = FORMATS.get(ext)
    if fmt is None:
        raise CorruptDataFileError(
            f"data file {path or file_name}: no known format has the extension {ext!r} "
            f"({', '.join('.' + n for n in NAMES)}); the manifest names a file minipaimon "
            "cannot read")
    return fmt


def table_format(schema: TableSchema) -> FileFormat:
    """The format new files of a table are written in: ``file.format``, else Paimon's
    default for the schema's version (ORC before version 3, Parquet since; tables of
    minipaimon's earlier format are Parquet). Raises UnsupportedFeatureError."""
    default = "orc" if schema.version < 3 and not schema.legacyFormat else "parquet"
    return by_name(schema.options.get("file.format", default))


__all__ = ["FILE_NAME_KEY", "FORMATS", "NAMES", "FileFormat", "FormatWriter", "by_name", "conform", "dictionary_columns",
           "extension_of", "of_file", "table_format"]
