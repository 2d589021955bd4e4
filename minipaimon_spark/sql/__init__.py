"""Table maintenance and row-level changes from Spark SQL: procedures as Python table
functions (``SELECT * FROM minipaimon_compact('/data/t')``).

Owns their registration and the maintenance procedures (:mod:`.procedures`), what they
share (:mod:`.procedure_support`: argument checks at analysis, analyze results), and the
procedures of branches, row changes, post-commit options and tags
(:mod:`.procedures_branches`, :mod:`.procedures_dml`, :mod:`.procedures_post_commit`,
:mod:`.procedures_tags`).

May import: every layer below it, up to ``dml/`` (layer order: docs/format.md, "Code
layout").
"""
