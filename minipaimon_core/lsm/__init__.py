"""Primary-key buckets as LSM trees: pure, vectorised policies over sorted runs.

Owns the merge engines and their configuration (:mod:`.merge_engines`, :mod:`.merge_config`,
:mod:`.merge_groups`, :mod:`.newest_wins`, :mod:`.partial_update`, the aggregations),
the streaming k-way merge of sorted runs in key-aligned steps (:mod:`.streaming_merge`),
changelog rows from two states of the same keys (:mod:`.changelog`), compaction picking
(:mod:`.compaction_picker`) and key ranges of data files (:mod:`.key_range`). No IO.

May import: ``errors``, ``format/``, ``io/``, ``expressions/``, ``file_format/`` (layer
order: docs/format.md, "Code layout").
"""
