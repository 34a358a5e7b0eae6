"""What the cluster tests share: the quorum as DescribeQuorum reports it, waiting for a
condition with a deadline, a node's metadata image read back from its stopped data
directory, and topic creation through a real admin client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from brook.broker.handlers import describe_quorum as describe_quorum_api
from brook.cli.local_cluster import LocalCluster
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata.image import MetadataImage
from brook.metadata.loader import MetadataLoader
from brook.metadata.quorum import CommittedBatch
from brook.net.connection import NodeConnection, NodeUnavailable
from brook.protocol.api import ApiKey
from brook.protocol.batch import CONTROL_BIT
from brook.protocol.records import iter_records
from brook.raft.partition_log import PartitionRaftLog
from brook.raft.snapshot_file import decode_snapshot

T = TypeVar("T")
# Short sessions so that a killed broker is fenced, and its restart registered, in seconds.
FAST = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}


@dataclass(frozen=True)
class Quorum:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: dict[int, int]  # replica id -> log end offset
    observers: dict[int, int]


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 60.0) -> T:
    """Poll ``check`` until it returns something other than None (or False)."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception as exc:  # a node in the middle of a restart, say
            last = exc
        else:
            if value is not None and value is not False:
                return value
        time.sleep(0.1)
    raise TimeoutError(f"{what} did not happen in {timeout} s (last error: {last!r})")


def describe_quorum_at(port: int) -> Quorum | None:
    """DescribeQuorum sent to a broker listener (which forwards it to the active
    controller); None while there is no answer."""

    async def ask() -> Quorum | None:
        conn = NodeConnection("127.0.0.1", port, "quorum-test")
        try:
            r = await conn.send(ApiKey.DESCRIBE_QUORUM, 2, describe_quorum_api.request_of(), 5)
        except (NodeUnavailable, TimeoutError):
            return None
        finally:
            conn.close()
        if r.error_code or not r.topics or r.topics[0].partitions[0].error_code:
            return None
        p = r.topics[0].partitions[0]
        return Quorum(
            p.leader_id,
            p.leader_epoch,
            p.high_watermark,
            {v.replica_id: v.log_end_offset for v in p.current_voters},
            {o.replica_id: o.log_end_offset for o in p.observers},
        )

    return asyncio.run(ask())


def describe_quorum(cluster: LocalCluster) -> Quorum | None:
    for node in cluster.brokers:
        if cluster.state(node.node_id) == "running":
            answer = describe_quorum_at(node.ports["PLAINTEXT"])
            if answer is not None:
                return answer
    return None


def wait_caught_up(cluster: LocalCluster, timeout: float = 60.0) -> Quorum:
    """Until every voter and observer has the leader's whole log (and it is committed)."""

    def settled() -> Quorum | None:
        q = describe_quorum(cluster)
        if q is None:
            return None
        ends = set(q.voters.values()) | set(q.observers.values())
        expected = {n.node_id for n in cluster.nodes}
        if set(q.voters) | set(q.observers) != expected:
            return None
        return q if ends == {q.high_watermark} else None

    return wait_for("every node catching up with the metadata log", settled, timeout)


def metadata_end(data_dir: Path) -> int:
    """The end offset of a stopped node's metadata log."""
    plog = PartitionLog.open(
        data_dir / "__cluster_metadata-0", LogConfig.from_topic_config({}), had_clean_shutdown=True
    )
    try:
        return plog.log_end_offset
    finally:
        plog.close_files()


def node_image(data_dir: Path, up_to: int | None = None) -> MetadataImage:
    """The metadata image a stopped node's data directory holds: its latest snapshot, then
    every record of its metadata log after it (below ``up_to`` when given)."""
    plog = PartitionLog.open(
        data_dir / "__cluster_metadata-0", LogConfig.from_topic_config({}), had_clean_shutdown=True
    )
    try:
        raft_log = PartitionRaftLog(plog)
        loader = MetadataLoader()
        start = plog.log_start_offset
        snapshot = raft_log.latest_snapshot_id()
        if snapshot is not None:
            loader.handle_load_snapshot(
                snapshot.offset,
                decode_snapshot(raft_log.read_whole_snapshot(snapshot), snapshot, "snapshot"),
            )
            start = snapshot.offset
        chunk = plog.read(start, 1 << 30).records
        batches: dict[int, list[tuple[int, bytes]]] = {}
        ends: dict[int, tuple[int, int]] = {}
        for header, record in iter_records(chunk, skip_control=False):
            if header.base_offset < start or (up_to is not None and header.next_offset > up_to):
                continue
            ends[header.base_offset] = (header.last_offset, header.partition_leader_epoch)
            if not header.attributes & CONTROL_BIT and record.value is not None:
                batches.setdefault(header.base_offset, []).append((record.offset, record.value))
        for base in sorted(ends):
            last, epoch = ends[base]
            loader.handle_commit(CommittedBatch(base, last, epoch, batches.get(base, [])))
        return loader.image
    finally:
        plog.close_files()
