"""Structured Streaming: the source over a table's snapshots and the exactly-once sink.

Owns the stream reader (:mod:`.stream_reader`) and what it shares with incremental batch
reads (:mod:`.stream_support`), the table a stream's offsets belong to
(:mod:`.stream_offsets`) and the sink (:mod:`.stream_writer`, which writes files as the
batch writer does).

May import: ``common/``, ``read/``, ``write/`` (layer order: docs/format.md, "Code layout").
"""
