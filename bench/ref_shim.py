"""Run a reference script unchanged, with pypaimon's warehouse path made absolute.

The reference ``bench_pypaimon.py`` passes a relative warehouse (``bench-data/...``);
pypaimon-rust's native plan/read/write rejects a relative path ("neither a valid url nor
path") and pypaimon silently falls back to its pure-Python code, so ``--native`` would
measure the pure path. This shim wraps ``CatalogFactory.create`` to absolutize the
warehouse, then runs the script as ``__main__``; nothing else changes.

usage: <peer python> bench/ref_shim.py <reference script> [its args...]
"""

from __future__ import annotations

import os
import runpy
import sys
from typing import Any


def _absolute_warehouse() -> None:
    try:
        from pypaimon import CatalogFactory
    except ImportError:
        return
    create = CatalogFactory.create

    def absolute_create(options: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        options = dict(options)
        wh = options.get("warehouse")
        if isinstance(wh, str) and "://" not in wh:
            options["warehouse"] = os.path.abspath(wh)
        return create(options, *args, **kwargs)

    CatalogFactory.create = staticmethod(absolute_create)  # type: ignore[method-assign]


if __name__ == "__main__":
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    if "pypaimon" in os.path.basename(script):
        _absolute_warehouse()
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
