"""Batch writes through the Python data source.

Owns the batch writer (:mod:`.writer`): tasks write data files, the driver commits them once,
creating the table on the first write (the streaming sink writes through it too).

May import: ``common/``, ``read/`` (layer order: docs/format.md, "Code layout").
"""
