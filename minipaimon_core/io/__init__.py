"""The storage seam: :class:`~.fileio.FileIO` and its implementations.

Owns reading and writing bytes: the local file system (:mod:`.fileio`), object stores
(:mod:`.fileio_object`, configured by :mod:`.fileio_s3` and :mod:`.fileio_azure`), the
resolution of a table path or URI to its file IO (:mod:`.fileio_resolve`), forked children
of a process that used a store (:mod:`.fileio_fork`), and the process's thread pools
(:mod:`.pools`). File formats stay out of it.

May import: ``errors`` and ``format/`` only (layer order: docs/format.md, "Code layout").
"""
