"""The layers of DESIGN.md hold: who may import whom, and no import cycle in broker/.

    wire/  <-  logstore/, coordinator/  <-  broker/

wire/ and logstore/ never import trio (sans-I/O; logstore blocks only in the
caller's thread, which the broker makes a worker thread); nothing below
broker/ imports it; broker/ modules import each other without a cycle, so
each part can be built and tested on its own. (coordinator/'s stricter rule,
no clock either, is tests/coordinator/test_layering.py.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ALLOWED = {
    "wire": {"wire"},
    "logstore": {"logstore", "wire"},
    "coordinator": {"coordinator", "wire"},
    "broker": {"broker", "logstore", "coordinator", "wire"},
}
PROJECT = set(ALLOWED) | {"spark", "tools", "tests", "bench", "compat_tests"}
NO_TRIO = {"wire", "logstore", "coordinator"}


def imports_of(path: Path) -> set[str]:
    """Module names imported at the top level of a module or inside functions
    (both count: a cycle through a function-level import still couples them);
    `if TYPE_CHECKING:` imports are left out, they exist only for readers."""
    tree = ast.parse(path.read_text(), str(path))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for n in ast.walk(node))
    names = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def modules(package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def test_each_package_imports_only_the_layers_below_it():
    for package, allowed in ALLOWED.items():
        for name, path in modules(package).items():
            for imported in imports_of(path):
                top = imported.split(".")[0]
                if top in PROJECT:
                    assert top in allowed, f"{name} imports {imported}"
                if package in NO_TRIO:
                    assert top != "trio", f"{name} imports trio"


@pytest.mark.slow
def test_broker_modules_import_each_other_without_a_cycle():
    broker = modules("broker")
    graph = {
        name: {m for m in broker if m != name and any(i == m for i in imports_of(path))}
        for name, path in broker.items()
    }
    # A package's __init__ re-exporting its modules is not a dependency of theirs.
    for name in graph:
        graph[name] = {m for m in graph[name] if not name.startswith(m + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
