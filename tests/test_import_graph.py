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

The connector, ``minipaimon_spark`` (issue 41), has the same rules over its own layers,
:data:`SPARK_LAYERS`: packages by role, with ``source.py`` (the DataSource) and ``demo.py``
beside the package entry on top; no import circle, ``TYPE_CHECKING`` imports included; no
module imports another module's private ``_name``; and what Spark imports in every new
session (the shim, the package entry, ``source.py``) imports nothing heavy at import time.

Edges are explicit imports only (``import a.b``, ``from a import b``, relative ones resolved);
the implicit import of a parent package's ``__init__`` is not an edge (Python finds the
package already in ``sys.modules`` while it is being initialised).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "minipaimon_core"
SPARK = "minipaimon_spark"

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


def _modules(package: str = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported_from(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    """The module a ``from ... import`` in module ``name`` reads from, relative ones resolved."""
    if not node.level:
        return node.module or ""
    base = name.split(".") if is_package else name.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str, path: Path, modules: dict[str, Path],
             typing_too: bool, functions_too: bool = True) -> set[str]:
    """Modules (of any package) that module ``name`` imports explicitly; with
    ``functions_too`` False, only those it imports when it is imported itself."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not typing_too:
            for child in node.orelse:
                visit(child)
            return
        if not functions_too and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _imported_from(node, name, is_package)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in modules else target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return out


def _graph(typing_too: bool, package: str = PACKAGE) -> dict[str, set[str]]:
    modules = _modules(package)
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
    """The layer of module ``name`` (None for the package entry, which imports everything):
    its package, or for a module beside the entry "top" (the core's ``errors``: "errors")."""
    parts = name.split(".")
    if len(parts) == 1:
        return None
    if path.parent == ROOT / parts[0] and path.name != "__init__.py":
        return "errors" if name == f"{PACKAGE}.errors" else "top"
    return parts[1]


def _upward_imports(graph: dict[str, set[str]], modules: dict[str, Path],
                    layers: tuple[str, ...] = LAYERS) -> list[str]:
    """The edges of ``graph`` from a layer to a layer above it, as "a (layer) -> b (layer)"."""
    out = []
    for name, targets in sorted(graph.items()):
        mine = _layer(name, modules[name])
        if mine is None:
            continue
        for target in sorted(targets):
            theirs = _layer(target, modules[target])
            if theirs is not None and layers.index(theirs) > layers.index(mine):
                out.append(f"{name} ({mine}) -> {target} ({theirs})")
    return out


def test_the_core_never_imports_pyspark() -> None:
    """Nor the connector built on it."""
    modules = _modules()
    outside = {"pyspark", SPARK, "pyspark_minipaimon"}
    offenders = {name for name, path in modules.items()
                 if any(m.split(".")[0] in outside for m in _imports(name, path, modules, True))}
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


# -- minipaimon_spark -------------------------------------------------------------------------

# The layers of minipaimon_spark, bottom first (docs/format.md, "Code layout"): a package,
# or "top": the modules beside the package entry (SPARK_TOP), which Spark and users import.
SPARK_LAYERS = ("common", "read", "write", "stream", "native", "dml", "sql", "top")
SPARK_TOP = {f"{SPARK}.source", f"{SPARK}.demo"}

# What Spark imports in every new session (the shim's ``DefaultSource``, the entry that
# ``register`` lives in): at import time only the standard library, pyspark and these.
CHEAP = {SPARK, f"{SPARK}.source", f"{SPARK}.common", f"{SPARK}.common.datasource",
         f"{SPARK}.common.worker_guard"}

# The one known exception; the test below fails once it is gone (then delete it here).
# A type-only edge that closes a circle: MiniPaimonMergeBuilder is typed by the
# MiniPaimonTable that makes it (a narrow protocol would break it).
KNOWN_TYPE_CIRCLE_EDGES = {(f"{SPARK}.dml.delta_merge", f"{SPARK}.dml.delta_table")}


def _private_imports(name: str, path: Path) -> set[str]:
    """The private names (``_x``) of other modules of minipaimon (the core, the connector,
    the shim) that module ``name`` imports, as ``module._x``."""
    ours = (PACKAGE, SPARK, "pyspark_minipaimon")
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            source = _imported_from(node, name, path.name == "__init__.py")
            if source.split(".")[0] in ours:
                out.update(f"{source}.{alias.name}" for alias in node.names
                           if alias.name.startswith("_") and not alias.name.startswith("__"))
    return out


def _spark_modules() -> dict[str, Path]:
    """The connector's modules and the auto-registration shim."""
    return {**_modules(SPARK), "pyspark_minipaimon": ROOT / "pyspark_minipaimon" / "__init__.py"}


def test_every_module_of_the_connector_is_in_a_layer() -> None:
    """A module of minipaimon_spark lives in a package of SPARK_LAYERS, or is one of the few
    on top (SPARK_TOP): a new module takes a role, it does not join the top by accident."""
    modules = _modules(SPARK)
    loose = {name for name, path in modules.items()
             if _layer(name, path) == "top" and name not in SPARK_TOP}
    assert loose == set(), f"{sorted(loose)}: move into the package of its role (SPARK_LAYERS)"
    for init in sorted((ROOT / SPARK).glob("*/__init__.py")):
        package = init.parent.name
        assert package in SPARK_LAYERS, f"{package}/ is no layer: add it to SPARK_LAYERS and docs/format.md"
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "Owns" in doc and "May import" in doc, \
            f"{SPARK}/{package}/__init__.py: say what it owns and may import"


def test_no_layer_of_the_connector_imports_a_layer_above_it() -> None:
    modules = _modules(SPARK)
    assert _upward_imports(_graph(True, SPARK), modules, SPARK_LAYERS) == []
    # nor the package entry (the public API: it imports every layer)
    assert {n for n, targets in _graph(True, SPARK).items()
            if SPARK in targets and n not in SPARK_TOP} == set()


def test_the_connector_has_no_import_circle() -> None:
    """None at run time (``read/reader`` <-> ``source`` was one), and none through a
    ``TYPE_CHECKING`` import either but the known ones, which still exist."""
    runtime, full = _graph(False, SPARK), _graph(True, SPARK)
    assert _cycle(runtime) is None
    for start, end in KNOWN_TYPE_CIRCLE_EDGES:
        assert end in full[start] and end not in runtime[start], \
            f"{start} -> {end} is gone: delete it from KNOWN_TYPE_CIRCLE_EDGES"
        full[start] = full[start] - {end}
    assert _cycle(full) is None


def test_the_connector_imports_no_private_name_of_another_module() -> None:
    found = {(name, private) for name, path in _spark_modules().items()
             for private in _private_imports(name, path)}
    assert found == set(), "import a public name (make it one), not a _name"


def test_what_spark_imports_in_every_session_stays_cheap() -> None:
    """The shim, the package entry and ``source.py`` import at import time only the standard
    library, pyspark and the cheap modules (:data:`CHEAP`): pyarrow and minipaimon_core come
    with the methods that use them (tests/spark/test_filters_types.py measures the same)."""
    modules = _spark_modules()
    for name in sorted(CHEAP | {"pyspark_minipaimon"}):
        imported = _imports(name, modules[name], modules, typing_too=False, functions_too=False)
        heavy = {m for m in imported if m not in CHEAP
                 and m.split(".")[0] not in sys.stdlib_module_names | {"pyspark"}}
        assert heavy == set(), f"{name} imports {sorted(heavy)} when it is imported"


def test_the_connector_checks_see_what_they_look_for(tmp_path: Path) -> None:
    """The checkers themselves: private names (relative imports resolved, dunders and other
    libraries' names aside), imports at import time (not in a function, not for types), and
    an upward import of the connector reported with its layers."""
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "from pyspark.sql.pandas.types import to_arrow_schema as _a\n"
        f"from {SPARK}.dml.distributed_merge import RESULT, _plain\n"
        "from .types import _private, quoted\n"
        "from . import __version__\n"
        "import pyarrow\n"
        "if TYPE_CHECKING:\n"
        "    import polars\n"
        "def f():\n"
        "    import numpy\n")
    name = f"{SPARK}.common.m"
    assert _private_imports(name, module) == {
        f"{SPARK}.dml.distributed_merge._plain", f"{SPARK}.common.types._private"}
    at_import = _imports(name, module, _spark_modules(), typing_too=False, functions_too=False)
    assert {"pyarrow", "typing"} <= at_import and not {"polars", "numpy"} & at_import
    modules = _modules(SPARK)
    graph = {f"{SPARK}.read.reader": {f"{SPARK}.source"}, f"{SPARK}.source": set()}
    assert _upward_imports(graph, modules, SPARK_LAYERS) == [
        f"{SPARK}.read.reader (read) -> {SPARK}.source (top)"]


def test_every_package_is_installed() -> None:
    """pyproject.toml's ``packages`` lists every package of the core and the connector (a
    package left out is missing from the wheel that Spark's workers import)."""
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts)
             for top in (PACKAGE, SPARK, "pyspark_minipaimon") for init in (ROOT / top).rglob("__init__.py")}
    assert found - listed == set(), "add them to [tool.setuptools] packages in pyproject.toml"


def test_no_source_module_is_over_400_lines() -> None:
    """STYLE.md: modules of 100-400 lines; split along their seams before they grow past."""
    long = {}
    for package in (PACKAGE, "minipaimon_spark"):
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = len(path.read_text().splitlines())
            if lines > 400:
                long[str(path.relative_to(ROOT))] = lines
    assert long == {}
