"""A table's schema and what follows from it: columns, keys, options, partitions, buckets.

Owns schema files and their manager (:mod:`.schema`), schema evolution (:mod:`.schema_evolution`,
:mod:`.table_schema_changes`), option checks against the columns (:mod:`.table_options`),
the Paimon features minipaimon reads and writes (:mod:`.features`), the partition spec
(:mod:`.partition`) and the bucket function (:mod:`.bucket`). Option names, kinds and their
parser are :mod:`minipaimon_core.format.options`.

May import: ``errors``, ``format/``, ``io/``, ``expressions/``, ``file_format/`` and
``lsm/`` (layer order: docs/format.md, "Code layout").
"""
