"""Values and conditions over columns, independent of any file or table.

Owns typed literals (:mod:`.literals`), filter predicates and their Arrow evaluation
(:mod:`.predicate`), the SQL condition parser of the row-level changes and the command line
(:mod:`.condition`), the column-statistics domain (:mod:`.stats`) and predicates evaluated
against statistics (:mod:`.stats_filter`), and sorted set operations on hash arrays
(:mod:`.sets`).

May import: ``errors``, ``format/`` and ``io/`` (layer order: docs/format.md, "Code layout").
"""
