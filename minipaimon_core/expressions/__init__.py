"""Values and conditions over columns, independent of any file or table.

Owns typed literals (:mod:`.literals`), filter predicates and their Arrow evaluation
(:mod:`.predicate`), the SQL condition parser of the command line (:mod:`.condition`), Spark SQL
expressions evaluated over Arrow for the SQL procedures (:mod:`.sql_parser`,
:mod:`.sql_compiler`, :mod:`.sql_types`, :mod:`.sql_functions`, :mod:`.sql_pruning`), a
Polars predicate as a filter (:mod:`.polars_predicate`), the column-statistics domain (:mod:`.stats`) and predicates evaluated
against statistics (:mod:`.stats_filter`), and sorted set operations on hash arrays
(:mod:`.sets`).

May import: ``errors``, ``format/`` and ``io/`` (layer order: docs/format.md, "Code layout").
"""
