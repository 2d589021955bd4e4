"""Apache Paimon's on-disk structures and their codecs, one module per structure.

The rest of the engine talks to the structs these modules produce, never to bytes. Also
owned here: every path of a table (:mod:`.layout`), the named kinds stored in files
(:mod:`.kinds`) and the table options a schema stores, with their one parser
(:mod:`.options`).

May import: ``errors`` only: the bottom layer (layer order: docs/format.md, "Code layout").
"""
