"""The native read, ``minipaimon_spark.table``: every file whose rows a read returns as stored
(or a selection of them) read by Spark's own Parquet reader, the rest by the Python data
source, at the same snapshot (:mod:`.native`), rows left out by their positions in the JVM
(:mod:`.native_rows`).

May import: ``common/``, ``read/``, ``write/``, ``stream/`` (layer order: docs/format.md,
"Code layout").
"""
