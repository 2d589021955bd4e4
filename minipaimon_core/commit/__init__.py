"""The commit pipeline: from commit messages to a new snapshot, and writes that commit.

Owns the committer (:mod:`.commit`), the manifests of one attempt (:mod:`.commit_metadata`),
the commit point (:mod:`.commit_point`), conflict rules (:mod:`.conflicts`), finding a
commit that already landed (:mod:`.commit_dedupe`), what the committer keeps right for
deletion vectors and first-row tables (:mod:`.dv_maintainer`, :mod:`.append_vectors`,
:mod:`.first_row`, :mod:`.placement`), and :mod:`.table_write` (write, then commit).

May import: every layer below it, up to ``write/`` (layer order: docs/format.md, "Code
layout").
"""
