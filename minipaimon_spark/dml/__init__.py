"""Changes to a table done by Spark tasks and committed once by the driver.

Owns ``minipaimon_spark.merge`` (:mod:`.distributed_merge`), delta-spark's API
(``MiniPaimonTable``: :mod:`.delta_table`, its merge builder :mod:`.delta_merge`), the
delete, update and merge jobs whose conditions and values Spark evaluates
(:mod:`.row_changes`), Spark SQL conditions and values analyzed on the driver
(:mod:`.spark_sql`), Spark's store assignment (:mod:`.store_assignment`) and distributed
compaction (:mod:`.compaction`).

May import: ``common/``, ``read/``, ``write/``, ``stream/``, ``native/`` (layer order:
docs/format.md, "Code layout").
"""
