"""Writing data files: from user batches to the commit messages a committer takes.

Owns bringing data to the table schema (:mod:`.conform`), write buffers and spilling
(:mod:`.write_buffer`, :mod:`.spill`), the append and key-value writers
(:mod:`.append_writer`, :mod:`.kv_writer`) and the rolling writer of sorted runs
(:mod:`.rolling`).

May import: ``errors``, ``format/``, ``io/``, ``expressions/``, ``file_format/``, ``lsm/``,
``schema/``, ``metadata/``, ``read/``, ``dynamic/`` (layer order: docs/format.md, "Code
layout").
"""
