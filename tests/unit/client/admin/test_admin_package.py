"""The admin client's package layout: every module imports on its own in a fresh interpreter,
imports inside the package point one way only (no module imports the package's __init__ or a
sibling that imports it back), and every name the single-module client offered still imports
from ``brook.client.admin``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from support import env_with_repo

import brook.client.admin

PACKAGE = "brook.client.admin"
PACKAGE_DIR = Path(brook.client.admin.__file__).resolve().parent
MODULES = sorted(p.stem for p in PACKAGE_DIR.glob("*.py") if p.stem != "__init__")


def module_imports(path: Path, module: str, package: str, submodules: set[str]) -> set[str]:
    """Every module ``module`` (at ``path``) imports, relative imports resolved; a
    ``from pkg import name`` counts as importing ``pkg.name`` when that is a module of the
    package, else ``pkg`` itself."""
    tree = ast.parse(path.read_text(), filename=str(path))
    own_package = module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = own_package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in submodules else target)
    return found


def package_graph(package_dir: Path, package: str) -> dict[str, set[str]]:
    """module -> the modules of ``package`` (or the package itself) it imports."""
    names = {p.stem for p in package_dir.glob("*.py") if p.stem != "__init__"}
    submodules = {f"{package}.{n}" for n in names}
    graph: dict[str, set[str]] = {}
    for name in sorted(names):
        module = f"{package}.{name}"
        imported = module_imports(package_dir / f"{name}.py", module, package, submodules)
        graph[module] = {m for m in imported if m == package or m in submodules}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle among the graph's nodes (as a path that ends where it starts), or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done or node not in graph:
            return None
        for following in sorted(graph[node]):
            cycle = visit(following, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


def layering_problems(package_dir: Path, package: str) -> list[str]:
    graph = package_graph(package_dir, package)
    problems = [f"{m} imports {package}" for m, deps in graph.items() if package in deps]
    cycle = find_cycle(graph)
    if cycle:
        problems.append("import cycle: " + " -> ".join(cycle))
    return problems


def test_the_package_has_its_domain_modules() -> None:
    assert {"core", "types", "topics", "configs", "partitions", "cluster", "groups"} <= set(MODULES)


@pytest.mark.parametrize("name", [PACKAGE, *(f"{PACKAGE}.{m}" for m in MODULES)])
def test_each_module_imports_alone_in_a_fresh_interpreter(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import {name}"],
        capture_output=True,
        text=True,
        env=env_with_repo(),
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")


def test_imports_inside_the_package_point_one_way() -> None:
    assert layering_problems(PACKAGE_DIR, PACKAGE) == []
    graph = package_graph(PACKAGE_DIR, PACKAGE)
    # The bottom and the plumbing know no domain; the domains do not know the clients.
    assert graph[f"{PACKAGE}.types"] == set()
    assert graph[f"{PACKAGE}.core"] == {f"{PACKAGE}.types"}
    for domain in ("topics", "configs", "partitions", "cluster", "groups"):
        assert graph[f"{PACKAGE}.{domain}"] <= {f"{PACKAGE}.core", f"{PACKAGE}.types"}, domain


def test_the_layering_check_sees_a_cycle_and_an_import_of_the_package(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text("from .b import B\nA = 1\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
    )
    (pkg / "c.py").write_text("from pkg import A\n")
    (pkg / "d.py").write_text("from . import b\nimport pkg.c\n")
    assert layering_problems(pkg, "pkg") == [
        "pkg.c imports pkg",
        "import cycle: pkg.a -> pkg.b -> pkg.a",
    ]


# What the single-module client (brook/client/admin.py with admin_types.py and
# admin_groups.py) offered by name, besides the plumbing it imported (ApiKey, Errors,
# NetworkClient, backoff_ms, the request helpers of group_requests).
FORMER_NAMES = [
    "Admin",
    "AdminError",
    "AlterConfigOp",
    "AlterConfigOpType",
    "AsyncAdmin",
    "BrokerNode",
    "CONSUMER_GROUP_STATES",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigSynonym",
    "ConsumerGroupDescription",
    "CreatedTopic",
    "ElectionType",
    "GroupListing",
    "KafkaError",
    "ListedOffset",
    "MemberDescription",
    "NetworkError",
    "NewPartitions",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetSpec",
    "PartitionInfo",
    "PartitionReassignment",
    "RequestTimeoutError",
    "SPEC_MIN_VERSION",
    "TopicDescription",
    "TopicListing",
    "TopicPartition",
    "UnsupportedVersionError",
]


def test_every_former_name_imports_from_the_package() -> None:
    missing = [n for n in FORMER_NAMES if not hasattr(brook.client.admin, n)]
    assert missing == []
    assert set(brook.client.admin.__all__) <= set(dir(brook.client.admin))
    assert {"QuorumInfo", "ReplicaState", "QuorumNode", "RaftVoterEndpoint"} <= set(
        brook.client.admin.__all__
    )
