"""Reading a table: plan, then read.

Owns scan planning into picklable splits (:mod:`.scan`, :mod:`.table_scan`), reading a
split as Arrow batches with merge-on-read of primary-key files (:mod:`.read`,
:mod:`.read_newest`), the one file reader, whole or table by table (:mod:`.file_read`) and
dictionary-encoded string columns (:mod:`.dict_columns`).

May import: ``errors``, ``format/``, ``io/``, ``expressions/``, ``file_format/``, ``lsm/``,
``schema/``, ``metadata/`` (layer order: docs/format.md, "Code layout").
"""
