"""Batch writes: tasks write data files, the driver commits them once (:mod:`.writer`),
creating the table on the first write.

May import: ``common/``, ``read/`` (layer order: docs/format.md, "Code layout").
"""
