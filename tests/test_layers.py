"""The package's layers: each imports only from itself and the layers below it.

The data's path through irrun is the order of its folders: ``ir`` reads the files
into plain records, ``ops`` holds the ops' attributes, shape rules and reference
kernels, ``fast`` the faster kernels checked against them (and what they need:
threads, BLAS), ``core`` binds, infers, plans and runs the graph, ``edit`` makes new documents of it
(surgery, for the writer), ``tools`` are the commands, and the
package's face (``irrun``, ``irrun.cli``) assembles them.  Imports are read from the
source with :mod:`ast` (those inside functions too), so a lazy import that goes up a
layer or closes a cycle fails here as well.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from collections.abc import Sequence
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "irrun"

# Lowest first.  A module belongs to the layer with the longest prefix naming it.
LAYERS = [
    ("base", ("irrun.errors", "irrun.files", "irrun.frozen", "irrun.text", "irrun.threads", "irrun.version")),
    ("ir", ("irrun.ir",)),
    ("ops", ("irrun.ops",)),
    ("fast", ("irrun.fast",)),
    ("core", ("irrun.core",)),
    ("edit", ("irrun.edit",)),
    ("tools", ("irrun.tools",)),
    ("face", ("irrun", "irrun.cli", "irrun.__main__")),
]

# What stays at the top of irrun/: the face and the base every layer uses.
TOP = {"__init__", "__main__", "cli", "errors", "files", "frozen", "text", "threads", "version"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int | None:
    best, found = -1, None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            exact = prefix == "irrun"  # the package's __init__, not all below it
            hit = module == prefix or (not exact and module.startswith(prefix + "."))
            if hit and len(prefix) > best:
                best, found = len(prefix), rank
    return found


def imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported irrun module, line) for each import in ``path``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.startswith("irrun")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            elif node.module and node.module.split(".")[0] == "irrun":
                target = node.module
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub if sub in MODULES else target, node.lineno))
    return found


EDGES = [
    (module, target, line)
    for module, path in MODULES.items()
    for target, line in imports(module, path)
    if target != module
]


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer_of(m) is None] == []


def test_every_import_names_a_module_of_the_package():
    assert [(m, t, line) for m, t, line in EDGES if t not in MODULES] == []


def test_only_the_face_and_the_base_stay_at_the_top():
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == TOP


def test_no_module_imports_from_a_layer_above_its_own():
    upward = [
        f"{MODULES[m].relative_to(PACKAGE.parent)}:{line}: {m} ({LAYERS[layer_of(m)][0]}) "
        f"imports {t} ({LAYERS[layer_of(t)][0]})"
        for m, t, line in EDGES
        if layer_of(t) > layer_of(m)
    ]
    assert upward == [], "upward imports:\n" + "\n".join(upward)


def test_no_import_cycle():
    graph = nx.DiGraph((m, t) for m, t, _ in EDGES)
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return
    pytest.fail("import cycle: " + " -> ".join([a for a, _ in cycle] + [cycle[0][0]]))


def test_the_checks_catch_an_upward_import_and_a_cycle():
    # What the two tests above would report, on a made-up edge each.
    assert layer_of("irrun.ir.reader") < layer_of("irrun.core.model")
    graph = nx.DiGraph((m, t) for m, t, _ in EDGES)
    graph.add_edge("irrun.ir.dims", "irrun.ops.window")  # ops.window imports ir.dims
    assert nx.find_cycle(graph)


def test_every_package_is_installed():
    # pyproject.toml lists the packages one by one: a folder missing there is missing
    # from a non-editable install, though every test run from the checkout passes.
    import tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    folders = {module_name(p.parent / "__init__.py") for p in PACKAGE.rglob("__init__.py")}
    assert folders - listed == set()


# --------------------------------------------------------------------------- op modules' names

OPS = PACKAGE / "ops"
OP_MODULES = sorted(p.stem for p in OPS.glob("*.py") if p.stem != "__init__")



@functools.cache
def registered_types(name: str) -> tuple[str, ...]:
    """The op types module ``irrun.ops.<name>`` registers, in order: it runs again with
    ``register`` recording instead, so types registered in a loop count too."""
    import irrun.ops  # noqa: F401  (what the module imports is loaded first)
    from irrun.ir import registry

    found: list[str] = []
    spec = importlib.util.spec_from_file_location(f"irrun.ops.{name}", OPS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "register", lambda op: found.append(op.type) or op)
        spec.loader.exec_module(module)
    return tuple(dict.fromkeys(found))


def unnamed(types: Sequence[str], text: str) -> list[str]:
    return [t for t in types if not re.search(rf"\b{t}\b", text)]


@pytest.mark.parametrize("name", OP_MODULES)
def test_an_op_module_names_its_ops_first(name):
    """A module's docstring's first paragraph names each op type the module registers."""
    doc = ast.get_docstring(ast.parse((OPS / f"{name}.py").read_text(encoding="utf-8"))) or ""
    assert unnamed(registered_types(name), doc.split("\n\n")[0]) == []


def test_the_ops_package_lists_each_module_with_its_ops():
    """irrun/ops/__init__.py's docstring is the table of families: a row per module that
    registers ops, naming them."""
    doc = ast.get_docstring(ast.parse((OPS / "__init__.py").read_text(encoding="utf-8"))) or ""
    rows: dict[str, str] = {}
    for line in doc.splitlines():
        if row := re.fullmatch(r"    (\w+)  +(\S.*)", line):
            rows[row[1]] = row[2]
        elif rows and re.fullmatch(r" {8,}\S.*", line):
            rows[next(reversed(rows))] += " " + line.strip()
    assert set(rows) == {name for name in OP_MODULES if registered_types(name)}
    assert {name: unnamed(registered_types(name), row) for name, row in rows.items()} == {
        name: [] for name in rows
    }

