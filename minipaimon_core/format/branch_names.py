"""Branch names (Paimon's ``BranchManager`` rules), kept apart from :mod:`.layout`, which
builds the paths ``branch/branch-<name>/...`` from them.

A branch name is what Paimon accepts (not ``main``, the main branch's name; not only
digits, which read as a snapshot id) and a plain name of the table's files (1-200 letters,
digits, '_', '-' or '.', not only dots), so no name can lead a path outside the table. A
directory of ``branch/`` is untrusted input: one whose name is not such a name is no
branch minipaimon reads, and the deletions refuse to run while it is there (Paimon's
engines may take it for one).
"""

from __future__ import annotations

import re

from ..errors import InvalidArgumentError

MAIN_BRANCH = "main"
BRANCH_DIR_PREFIX = "branch-"
BRANCH_OPTION = "branch"  # Paimon's option: the branch a table handle reads and writes
FALLBACK_BRANCH = "scan.fallback-branch"  # Paimon's table option: where missing partitions are read
_NAME = re.compile(r"[A-Za-z0-9_\-.]{1,200}")  # fullmatch


def is_branch_name(name: object) -> bool:
    """Whether ``name`` can name a branch other than main (see the module docs)."""
    return (isinstance(name, str) and bool(_NAME.fullmatch(name)) and set(name) != {"."}
            and name != MAIN_BRANCH and not name.isdigit())


def check_branch_name(name: object) -> str:
    """``name`` if :func:`is_branch_name`, else InvalidArgumentError saying why."""
    if not is_branch_name(name):
        why = ("'main' is the main branch" if name == MAIN_BRANCH
               else "a name of digits only reads as a snapshot id" if isinstance(name, str) and name.isdigit()
               else "use 1-200 letters, digits, '_', '-' or '.'")
        raise InvalidArgumentError(f"invalid branch name {name!r}: {why}")
    assert isinstance(name, str)
    return name


def is_branch_dir_name(name: str) -> bool:
    """Whether a directory of ``branch/`` is named as a branch's (``branch-...``), valid or
    not: what Paimon's engines take for a branch."""
    return name.startswith(BRANCH_DIR_PREFIX)


__all__ = ["BRANCH_DIR_PREFIX", "BRANCH_OPTION", "FALLBACK_BRANCH", "MAIN_BRANCH", "check_branch_name", "is_branch_dir_name", "is_branch_name"]
