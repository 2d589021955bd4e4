"""Batch reads through the Python data source: plan a snapshot on the driver, read splits in
the tasks.

Owns the batch reader (:mod:`.reader`), the partitions tasks read, stream splits of
incremental reads and streams included (:mod:`.partitions`), Spark's pushed filters as the
core's terms (:mod:`.filters`), system tables (``path$snapshots``, :mod:`.system`) and the
routing of splits between Spark's Parquet reader and this one (:mod:`.native_plan`: one
owner, so ``minipaimon_spark.table``'s two parts always split a plan the same way).

May import: ``common/`` (layer order: docs/format.md, "Code layout").
"""
