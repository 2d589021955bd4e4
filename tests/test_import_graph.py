"""The import graph of the core, read from the source (``TYPE_CHECKING`` imports included).

Rules (issue 14): the core never imports pyspark; its runtime imports have no cycle; and the
only modules that import the ``table`` facade are the ones that are views over a whole table
(catalog, cli, diff, streams, system tables) - compaction, the post-commit path, maintenance,
scanning and writing take a narrow
:class:`~minipaimon_core.metadata.context.TableContext` instead, so no circle through ``table.py`` starts from them.

Edges are explicit imports only (``import a.b``, ``from a import b``, relative ones resolved);
the implicit import of a parent package's ``__init__`` is not an edge (Python finds the
package already in ``sys.modules`` while it is being initialised).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "minipaimon_core"

# Modules that may import the facade: views over a whole table, and the package entry.
FACADE_USERS = {
    "minipaimon_core", "minipaimon_core.catalog", "minipaimon_core.cli.cli", "minipaimon_core.diff",
    "minipaimon_core.migrate", "minipaimon_core.stream.stream", "minipaimon_core.system_tables",
    "minipaimon_core.stream.table_stream",
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path, modules: dict[str, Path],
             typing_too: bool) -> set[str]:
    """Modules (of any package) that module ``name`` imports explicitly."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not typing_too:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in modules else target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return out


def _graph(typing_too: bool) -> dict[str, set[str]]:
    modules = _modules()
    return {name: {m for m in _imports(name, path, modules, typing_too) if m in modules}
            for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (as a path that returns to its start), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = dfs(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = dfs(node)
            if found:
                return found
    return None


def test_the_core_never_imports_pyspark() -> None:
    modules = _modules()
    offenders = {name for name, path in modules.items()
                 if any(m.split(".")[0] == "pyspark" for m in _imports(name, path, modules, True))}
    assert offenders == set()


def test_runtime_imports_have_no_cycle() -> None:
    graph = _graph(typing_too=False)
    # the package entry imports everything and nothing imports it back explicitly
    assert not any(PACKAGE in targets for targets in graph.values())
    assert _cycle(graph) is None


def test_only_whole_table_views_import_the_facade() -> None:
    graph = _graph(typing_too=True)
    users = {name for name, targets in graph.items() if f"{PACKAGE}.table" in targets}
    assert users <= FACADE_USERS, users - FACADE_USERS
    # and nothing else reaches the facade through them
    narrow = {f"{PACKAGE}.{m}" for m in (
        "maintenance.compaction", "maintenance.post_commit", "metadata.context",
        "read.table_scan", "commit.table_write", "metadata.tags", "maintenance",
        "maintenance.expire", "maintenance.files", "maintenance.manifests",
        "maintenance.orphans", "maintenance.rollback", "commit.commit")}
    for start in narrow:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            todo.extend(graph[node])
        assert f"{PACKAGE}.table" not in seen, start


def test_the_graph_reader_sees_relative_and_typing_imports() -> None:
    """The reader itself: a TYPE_CHECKING import of the facade is an edge of the full graph
    only, and ``from . import x`` resolves to the submodule."""
    full, runtime = _graph(typing_too=True), _graph(typing_too=False)
    assert f"{PACKAGE}.table" in full[f"{PACKAGE}.diff"]
    assert f"{PACKAGE}.table" not in runtime[f"{PACKAGE}.diff"]
    assert f"{PACKAGE}.format.snapshot" in runtime[f"{PACKAGE}.metadata.tags"]


def test_no_source_module_is_over_400_lines() -> None:
    """STYLE.md: modules of 100-400 lines; split along their seams before they grow past."""
    long = {}
    for package in (PACKAGE, "minipaimon_spark"):
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = len(path.read_text().splitlines())
            if lines > 400:
                long[str(path.relative_to(ROOT))] = lines
    assert long == {}
