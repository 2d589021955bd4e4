"""A table's state as its metadata files describe it, read and written through a FileIO.

Owns manifests (:mod:`.manifest_io`, :mod:`.manifest_merge`), snapshots
(:mod:`.snapshot_manager`), long-lived changelogs (:mod:`.changelog_manager`), tags
(:mod:`.tags`), consumers (:mod:`.consumer`), deletion-vector index files
(:mod:`.deletion_vectors`), the narrow view of one table that operations take
(:mod:`.context`), the commit message a writer hands the committer
(:mod:`.commit_message`) and sequence numbers (:mod:`.sequence`, :mod:`.resequence`).

May import: everything below it: ``errors``, ``format/``, ``io/``, ``expressions/``,
``file_format/``, ``lsm/``, ``schema/`` (layer order: docs/format.md, "Code layout").
"""
