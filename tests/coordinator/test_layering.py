"""coordinator/ imports only wire/, the standard library and RE2 (pure
computation, as the standard library's `re` would be), and never reads the clock."""

import ast
from pathlib import Path

import coordinator

PACKAGE = Path(coordinator.__file__).parent
FORBIDDEN_MODULES = {"trio", "socket", "asyncio", "selectors", "time", "datetime", "broker"}


def _modules():
    for path in sorted(PACKAGE.glob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def test_coordinator_imports_no_io_no_clock_and_not_the_broker():
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top not in FORBIDDEN_MODULES, f"{path.name} imports {name}"
                if top not in {"coordinator", "wire", "re2"}:
                    assert top in _STDLIB_OK, f"{path.name} imports {name}"


_STDLIB_OK = {
    "__future__",
    "collections",
    "dataclasses",
    "enum",
    "functools",
    "heapq",
    "itertools",
    "logging",
    "struct",
    "typing",
    "uuid",
}
