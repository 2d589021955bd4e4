"""Streaming reads: offsets over snapshots and changelogs, and the Python consumer.

Owns the stream planner of changes between offsets (:mod:`.stream`) and the consuming
stream over a table (:mod:`.table_stream`). Consumer progress files are
:mod:`minipaimon_core.metadata.consumer`.

May import: every layer below it, up to ``dml/`` (layer order: docs/format.md, "Code
layout"); the table facade only for types, as a protocol it is handed.
"""
