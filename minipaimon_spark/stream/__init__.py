"""Structured Streaming: the source over a table's snapshots and the exactly-once sink.

Owns the stream reader (:mod:`.stream_reader`) and its small pieces (:mod:`.stream_support`:
a refused stream, the schema check, admission control), the table a stream's offsets belong
to (:mod:`.stream_offsets`) and the sink (:mod:`.stream_writer`, which writes files as the
batch writer does). Its partitions are ``read/``'s (incremental batch reads plan the same).

May import: ``common/``, ``read/``, ``write/`` (layer order: docs/format.md, "Code layout").
"""
