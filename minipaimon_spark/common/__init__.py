"""What every role of the connector shares: the bottom layer of ``minipaimon_spark``.

Owns the data source's name and its one-line errors (:mod:`.datasource`), the pickling of
every object shipped to a Python worker, with one clear line where the worker's Python lacks
minipaimon (:mod:`.worker_guard`), Spark types <-> Arrow types and batches brought to
Spark's exact schema (:mod:`.types`), Spark's time zone rules for timestamps
(:mod:`.zones`), the read and write options, parsed once (:mod:`.options`), and where a
session finds tables (:mod:`.connection`: ``spark.minipaimon.*`` settings, warehouse).

This ``__init__`` imports nothing, and :mod:`.datasource` and :mod:`.worker_guard` only the
standard library and pyspark: ``source.py`` imports them when Spark looks the source up in
every new session, which must stay cheap.

May import: ``minipaimon_core`` and pyspark; no other package of ``minipaimon_spark``
(layer order: docs/format.md, "Code layout").
"""
