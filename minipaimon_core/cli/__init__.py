"""The ``minipaimon`` command line (:mod:`.cli`; ``python -m minipaimon_core.cli``) and its
output (:mod:`.cli_format`, :mod:`.cli_progress`).

May import: anything in minipaimon_core; nothing imports it (layer order: docs/format.md,
"Code layout").
"""
