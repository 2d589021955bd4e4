"""The ``minipaimon`` command line (:mod:`.cli`; ``python -m minipaimon_core.cli``) and its
output (:mod:`.cli_format`, :mod:`.cli_progress`).

``main`` is exported here so the console script's entry point stays
``minipaimon_core.cli:main`` (scripts installed before the move keep working).

May import: anything in minipaimon_core; nothing imports it (layer order: docs/format.md,
"Code layout").
"""

from .cli import main

__all__ = ["main"]
