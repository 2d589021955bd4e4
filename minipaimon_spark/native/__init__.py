"""The native read, ``minipaimon_spark.table``.

Owns the read that hands Spark's own Parquet reader every file whose rows a read returns as
stored (or a selection of them) and reads the rest through the Python data source, at the
same snapshot (:mod:`.native`), and leaving rows out of Spark's scan by their positions, in
the JVM (:mod:`.native_rows`). Which splits go where is ``read/native_plan``'s.

May import: ``common/``, ``read/``, ``write/``, ``stream/`` (layer order: docs/format.md,
"Code layout").
"""
