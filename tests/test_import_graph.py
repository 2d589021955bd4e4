"""The import graph of the core, read from the source (``TYPE_CHECKING`` imports included).

Rules (issue 14, issue 29; written down in docs/format.md, "Code layout"): the core never
imports pyspark; its packages are layers in the order :data:`LAYERS`, and a module imports
only its own layer and the layers below it (``errors``, ``format/`` and ``io/`` at the
bottom, ``format/`` importing nothing but ``errors``); there is no import circle anywhere,
``TYPE_CHECKING`` imports included; and the only modules that import the ``table`` facade
are the package entry, the catalog, the command line and the migration - the readers of a
whole table (diff, system tables, streams) are typed by
:class:`~minipaimon_core.read.table_view.TableView` and compaction, the post-commit path,
maintenance, scanning and writing take a narrow
:class:`~minipaimon_core.metadata.context.TableContext`, so no circle through ``table.py``
starts from them.

Edges are explicit imports only (``import a.b``, ``from a import b``, relative ones resolved);
the implicit import of a parent package's ``__init__`` is not an edge (Python finds the
package already in ``sys.modules`` while it is being initialised).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "minipaimon_core"

# Modules that may import the facade: the package entry, and what opens tables by path.
FACADE_USERS = {
    "minipaimon_core", "minipaimon_core.catalog", "minipaimon_core.cli.cli", "minipaimon_core.cli.cli_commands",
    "minipaimon_core.migrate", "minipaimon_core.polars_scan",
}

# The layers of minipaimon_core, bottom first: a package of the core, or "errors" (the one
# error hierarchy) and "top" (the other modules at the top: the table facade, the catalog,
# diff, system tables, migration). A module may import its own layer and the layers before.
LAYERS = (
    "errors", "format", "io", "expressions", "file_format", "lsm", "schema", "metadata",
    "read", "dynamic", "write", "commit", "maintenance", "dml", "stream", "top", "cli",
)


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


def _layer(name: str, path: Path) -> str | None:
    """The layer of module ``name`` (None for the package entry, which imports everything)."""
    parts = name.split(".")
    if len(parts) == 1:
        return None
    if path.parent == ROOT / PACKAGE and path.name != "__init__.py":
        return "errors" if parts[1] == "errors" else "top"
    return parts[1]


def _upward_imports(graph: dict[str, set[str]], modules: dict[str, Path]) -> list[str]:
    """The edges of ``graph`` from a layer to a layer above it, as "a (layer) -> b (layer)"."""
    out = []
    for name, targets in sorted(graph.items()):
        mine = _layer(name, modules[name])
        if mine is None:
            continue
        for target in sorted(targets):
            theirs = _layer(target, modules[target])
            if theirs is not None and LAYERS.index(theirs) > LAYERS.index(mine):
                out.append(f"{name} ({mine}) -> {target} ({theirs})")
    return out


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


def test_no_import_circle_even_for_types() -> None:
    """Not even a ``TYPE_CHECKING`` import closes a circle (issue 29: ``table`` <-> diff /
    system tables / streams, ``dml`` <-> ``dml_write`` were the last)."""
    assert _cycle(_graph(typing_too=True)) is None


def test_every_package_is_a_layer_with_its_rules_written_down() -> None:
    """Each package of the core is in :data:`LAYERS`, and its ``__init__`` docstring says
    what it owns and what it may import."""
    for init in sorted((ROOT / PACKAGE).glob("*/__init__.py")):
        package = init.parent.name
        assert package in LAYERS, f"{package}/ is no layer: add it to LAYERS and docs/format.md"
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "May import" in doc, f"{package}/__init__.py: say what it owns and may import"


def test_no_layer_imports_a_layer_above_it() -> None:
    modules = _modules()
    assert _upward_imports(_graph(typing_too=True), modules) == []


def test_format_and_io_import_nothing_above_them() -> None:
    modules = _modules()
    graph = _graph(typing_too=True)
    allowed = {"format": {"errors", "format"}, "io": {"errors", "format", "io"}}
    for name, targets in graph.items():
        mine = _layer(name, modules[name])
        if mine in allowed:
            assert {_layer(t, modules[t]) for t in targets} <= allowed[mine], name


def test_the_layer_check_sees_an_upward_import() -> None:
    """The checker itself: an import of the facade from a lower layer is reported."""
    modules = _modules()
    graph = {f"{PACKAGE}.read.scan": {f"{PACKAGE}.table", f"{PACKAGE}.format.snapshot"},
             f"{PACKAGE}.table": {f"{PACKAGE}.read.scan"}}
    assert _upward_imports(graph, modules) == [
        f"{PACKAGE}.read.scan (read) -> {PACKAGE}.table (top)"]


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
    """The reader itself: a TYPE_CHECKING import is an edge of the full graph only, and
    ``from . import x`` resolves to the submodule."""
    full, runtime = _graph(typing_too=True), _graph(typing_too=False)
    changes = f"{PACKAGE}.schema.table_schema_changes"
    assert f"{PACKAGE}.io.fileio" in full[changes]
    assert f"{PACKAGE}.io.fileio" not in runtime[changes]
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
