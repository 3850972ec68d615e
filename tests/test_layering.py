"""The house rules of imports, measured on the source: no arrow runs upward.

Top level: ``server`` -> ``schema`` -> ``resolvers`` -> ``storage`` (an arrow may skip
floors, never climb); the shared harness ``testing`` stands on the product, and
``benchmarks`` and ``reliability`` on the harness (neither imports ``tests``, nor the
other). Inside storage, each folder imports only from the floors below it and itself
(``storage/__init__.py`` draws the floors). Every import counts, those under
``TYPE_CHECKING`` and inside functions too: a lazy import is still an arrow.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What each top-level package may import from the project (besides itself).
TOP = {
    "storage": set(),
    "resolvers": {"storage"},
    "schema": {"resolvers", "storage"},
    "server": {"schema", "resolvers", "storage"},
    "testing": {"server", "schema", "resolvers", "storage"},
    "reliability": {"testing", "server", "schema", "resolvers", "storage"},
    "benchmarks": {"testing", "server", "schema", "resolvers", "storage"},
}
# What each storage folder may import (besides itself).
STORAGE = {
    "base": set(),
    "model": {"base"},
    "engine": {"base", "model"},
    "reads": {"base", "model", "engine"},
    "writes": {"base", "model", "engine"},
    "live": {"base", "model", "engine", "reads"},
    "ops": {"base", "model", "engine", "reads", "writes"},
}
# Neither does I/O nor loads an engine client library or a web framework.
PURE_FOLDERS = ("storage.base", "storage.model")
PURE = ["storage.reads.planner", "storage.reads.cursor", "storage.reads.merge"]


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[str]:
    """Every project module ``path`` imports, wherever the import statement stands."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            # ``from storage import keys`` names a module as well as a package.
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def _sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _arrows(package: str) -> list[tuple[str, str]]:
    found = []
    for path in _sources(package):
        for target in _imports(path):
            if target.split(".")[0] in TOP:
                found.append((_module(path), target))
    return found


def _folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in STORAGE) else None


@pytest.mark.parametrize("package", sorted(TOP))
def test_top_level_arrows_point_down(package: str) -> None:
    upward = [
        (source, target)
        for source, target in _arrows(package)
        if target.split(".")[0] not in TOP[package] | {package}
    ]
    assert upward == []


def test_every_storage_module_sits_in_a_folder() -> None:
    loose = [
        _module(p)
        for p in _sources("storage")
        if p.parent == ROOT / "storage" and p.name != "__init__.py"
    ]
    assert loose == []
    folders = {p.name for p in (ROOT / "storage").iterdir() if (p / "__init__.py").exists()}
    assert folders == set(STORAGE)


def _wrong(folder: str, arrows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    wrong = []
    for source, target in arrows:
        into = _folder(target) if target.startswith("storage.") else None
        if into is not None and into != folder and into not in STORAGE[folder]:
            wrong.append((source, target))
    return wrong


@pytest.mark.parametrize("folder", sorted(STORAGE))
def test_storage_folders_import_only_the_floors_below(folder: str) -> None:
    assert _wrong(folder, _arrows(f"storage/{folder}")) == []


def test_the_rule_catches_a_sideways_arrow(tmp_path: Path) -> None:
    """The checks above can fail: a read importing a write, or the engine importing a read
    under TYPE_CHECKING, is seen as one."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "from storage.writes import create\n"
        "if TYPE_CHECKING:\n"
        "    from storage.reads.snapshots import PlanMemory\n"
    )
    arrows = [("probe", t) for t in _imports(probe)]
    assert ("probe", "storage.writes.create") in _wrong("reads", arrows)
    assert ("probe", "storage.reads.snapshots") in _wrong("engine", arrows)
    assert _wrong("ops", arrows) == []


def _pure_modules() -> list[str]:
    modules = [
        _module(p)
        for folder in PURE_FOLDERS
        for p in _sources(folder.replace(".", "/"))
        if p.name != "__init__.py"
    ]
    return sorted(modules + PURE)


@pytest.mark.parametrize("module", _pure_modules())
def test_pure_storage_modules_do_not_load_the_engine_client(module: str) -> None:
    probe = (
        f"import sys, {module}; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('aioboto3', 'aiobotocore', 'botocore', 'boto3', 'strawberry', 'starlette')); "
        "print(','.join(loaded))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` (module -> modules it imports), or []."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


@pytest.mark.parametrize("package", ["storage", "resolvers", "server"])
def test_no_import_circles(package: str) -> None:
    """``schema`` is left out: its GraphQL types refer to each other lazily (Strawberry's
    ``Annotated[..., lazy(...)]``), the one circle the house allows."""
    modules = {_module(p) for p in _sources(package)}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for source, target in _arrows(package):
        # A package's __init__ importing its own modules is not a circle of jobs.
        inside = source.startswith(target + ".") or target.startswith(source + ".")
        if target in modules and target != source and not inside:
            graph[source].add(target)
    assert _cycle(graph) == []


def test_the_circle_check_finds_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []
