"""``meta.properties``: which cluster and node a data directory belongs to (Kafka's
MetaProperties: ``version=1``, ``cluster.id``, ``node.id``, ``directory.id``).

``brook storage format`` writes one into every log directory; a node checks them all before
it starts, and refuses storage of another cluster or node, or storage that was never
formatted when its configuration needs it (a node of a multi-node quorum). A lone combined
node formats itself at its first start.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .checkpoints import read_properties, write_properties

META_PROPERTIES = "meta.properties"


class StorageCheckError(RuntimeError):
    """The node's storage does not belong to it: the message names what disagrees."""


def new_uuid() -> str:
    """A random UUID as Kafka prints one: URL-safe base64 without padding (22 chars)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def is_valid_cluster_id(text: str) -> bool:
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError):
        return False
    return len(raw) == 16 and len(text) == 22


@dataclass(frozen=True)
class DirectoryState:
    path: Path
    props: dict[str, str]

    @property
    def formatted(self) -> bool:
        return bool(self.props)


def read_all(dirs: Sequence[str | Path]) -> list[DirectoryState]:
    return [DirectoryState(Path(d), read_properties(Path(d) / META_PROPERTIES)) for d in dirs]


def format_directory(directory: Path, cluster_id: str, node_id: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    write_properties(
        directory / META_PROPERTIES,
        {
            "version": "1",
            "cluster.id": cluster_id,
            "node.id": str(node_id),
            "directory.id": new_uuid(),
        },
    )


def format_storage(
    dirs: Sequence[str | Path], cluster_id: str, node_id: int, ignore_formatted: bool
) -> list[Path]:
    """``brook storage format``: returns the directories it wrote. A directory already
    formatted is an error unless ``ignore_formatted`` (then it is left alone)."""
    if not is_valid_cluster_id(cluster_id):
        raise StorageCheckError(
            f"Cluster ID string {cluster_id} does not appear to be a valid UUID: use "
            "'brook storage random-uuid' to make one"
        )
    written = []
    for state in read_all(dirs):
        if state.formatted:
            if ignore_formatted:
                continue
            raise StorageCheckError(
                f"Log directory {state.path} is already formatted (cluster "
                f"{state.props.get('cluster.id')}); use --ignore-formatted to leave it as it is"
            )
        format_directory(state.path, cluster_id, node_id)
        written.append(state.path)
    return written


def check_storage(
    dirs: Sequence[str | Path],
    node_id: int,
    *,
    configured_cluster_id: str | None,
    may_self_format: bool,
) -> str:
    """The cluster id this node's storage belongs to, after checking every directory.

    Unformatted directories beside formatted ones are formatted alike (a new log directory);
    storage with no formatted directory is formatted here only when ``may_self_format``."""
    states = read_all(dirs)
    formatted = [s for s in states if s.formatted]
    if not formatted:
        if not may_self_format:
            names = ", ".join(str(s.path) for s in states)
            raise StorageCheckError(
                f"No meta.properties found in {names}: this node's storage is not formatted; "
                "run 'brook storage format --cluster-id <id> --config <server.properties>' "
                "first (make an id with 'brook storage random-uuid')"
            )
        cluster_id = configured_cluster_id or new_uuid()
    else:
        ids = {s.props.get("cluster.id") for s in formatted}
        if len(ids) > 1:
            detail = ", ".join(f"{s.path} has {s.props.get('cluster.id')}" for s in formatted)
            raise StorageCheckError(f"The log directories belong to different clusters: {detail}")
        cluster_id = str(next(iter(ids)))
        for s in formatted:
            stored_node = s.props.get("node.id", s.props.get("broker.id"))
            if stored_node is not None and stored_node != str(node_id):
                raise StorageCheckError(
                    f"Stored node id {stored_node} in {s.path / META_PROPERTIES} does not "
                    f"match node.id {node_id} in the configuration"
                )
        if configured_cluster_id and configured_cluster_id != cluster_id:
            raise StorageCheckError(
                f"The storage belongs to cluster {cluster_id} ({formatted[0].path}) but "
                f"cluster.id is {configured_cluster_id} in the configuration"
            )
    for s in states:
        if not s.formatted:
            format_directory(s.path, cluster_id, node_id)
    return cluster_id
