"""The test tree's own rule: pytest imports test modules by basename (no packages), so two
test files with one name make collection fail for the whole run."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_test_file_basenames_are_unique() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if "__pycache__" not in path.parts:
            by_name[path.name].append(str(path.relative_to(TESTS)))
    shared = {
        name: paths
        for name, paths in by_name.items()
        if len(paths) > 1 and name not in ("conftest.py", "__init__.py")
    }
    assert shared == {}
