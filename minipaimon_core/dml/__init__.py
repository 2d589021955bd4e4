"""Row-level changes: delete, update and merge, and the units Spark writes them in.

Owns :mod:`.dml` (delete / update), :mod:`.merge_into` and :mod:`.merge_keys` (merge),
the values and sequence numbers they write (:mod:`.dml_values`, :mod:`.dml_sequence`), the
file writes and commit (:mod:`.dml_write`), previews (:mod:`.dml_preview`) and the merge
units of the Spark connector (:mod:`.merge_units`).

May import: every layer below it, up to ``maintenance/`` (layer order: docs/format.md,
"Code layout"); never the ``table`` facade.
"""
