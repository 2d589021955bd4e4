"""Dynamic buckets: primary-key tables with ``bucket`` = -1 (Paimon's default for them).

Buckets are not a function of the key; a table remembers where each key is:

* ``HASH_DYNAMIC`` (the key holds every partition column): Paimon's HASH index, one index
  file per (partition, bucket) with the hashes of the keys in that bucket
  (:mod:`.hash_index`); writers assign new keys to buckets by
  ``dynamic-bucket.target-row-num`` / ``dynamic-bucket.initial-buckets`` (:mod:`.assigner`);
* ``CROSS_PARTITION`` (the key leaves out a partition column): no index on disk, as in
  Paimon; a writer builds the key -> (partition, bucket) map from the table when it starts
  (:mod:`.key_map`) and routes each key, moving it between partitions as the merge engine
  says (:mod:`.cross_partition`).

:mod:`.routing` picks the step for a writer's bucket mode (fixed buckets too). The
committer keeps one key in one bucket whatever writers did (:mod:`.commit_step`): writers
of one commit (Spark tasks) that put a key in two buckets of a partition are reconciled by
moving its rows (:mod:`.reconcile`); a commit whose keys another commit since its writer
started put elsewhere fails with ``CommitConflictError`` (``BUCKET_ASSIGNMENT``). Hash sets
are handled by sorting (:mod:`minipaimon_core.expressions.sets`). The rules, in prose:
docs/format.md, "Bucketing".

May import: every layer below it, up to ``read/`` (layer order: docs/format.md, "Code
layout").
"""
