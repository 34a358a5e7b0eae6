"""The metadata quorum's own files on real ``brook cluster`` nodes: snapshots are taken as the
metadata log grows and the log behind them is dropped, so a node that was down while that
happened catches up by fetching the leader's snapshot (FetchSnapshot); a damaged snapshot, one
whose content is not the snapshot its name says, or an unreadable quorum-state file stops the
node from starting, with a message naming the file."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from quorum_support import FAST, wait_for
from support import local_cluster

from brook.cli.local_cluster import NodeNotServing
from brook.metadata.offline import metadata_log_end
from brook.raft.partition_log import parse_snapshot_name

SNAPSHOTS = {
    **FAST,
    "metadata.log.max.record.bytes.between.snapshots": "2048",
    "metadata.max.retention.bytes": "1",
}


def _snapshots(node_dir: Path) -> list[Path]:
    meta = node_dir / "data" / "__cluster_metadata-0"
    return sorted(meta.glob("*.checkpoint"))


def _create_topics(bootstrap: str, count: int) -> list[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"s-{uuid.uuid4().hex[:10]}" for _ in range(count)]
    for name in names:
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return names


def test_a_node_behind_the_log_start_catches_up_from_the_snapshot(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=SNAPSHOTS) as cluster:
        cluster.kill(3)
        live = ",".join(n.broker_address for n in cluster.brokers if n.node_id != 3)
        names = _create_topics(live, 60)
        leader_dir = cluster.node(1).directory
        wait_for("a snapshot on node 1", lambda: _snapshots(leader_dir))
        behind = metadata_log_end(cluster.node(3).data_dir)
        cluster.restart(3)
        committed = cluster.wait_metadata_caught_up().high_watermark
        # node 3 could not have fetched the records it lacked: the others dropped them
        assert parse_snapshot_name(_snapshots(cluster.node(3).directory)[-1].name).offset > behind
        admin = AdminClient({"bootstrap.servers": cluster.node(3).broker_address})
        wait_for(
            "node 3 listing every topic",
            lambda: set(names) <= set(admin.list_topics(timeout=10).topics),
        )
        cluster.stop()
        digests = cluster.metadata_digests(committed)
        assert len(set(digests.values())) == 1, digests


@pytest.mark.parametrize("damage", ["flipped byte", "renamed", "quorum-state"])
def test_damaged_quorum_files_stop_the_node_naming_them(tmp_path: Path, damage: str) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=SNAPSHOTS) as cluster:
        _create_topics(cluster.bootstrap_servers, 30)
        node = cluster.node(2)
        wait_for("a snapshot on node 2", lambda: _snapshots(node.directory))
        cluster.stop_node(2)
        meta = node.data_dir / "__cluster_metadata-0"
        latest = _snapshots(node.directory)[-1]
        if damage == "flipped byte":
            data = bytearray(latest.read_bytes())
            data[len(data) // 2] ^= 0xFF
            latest.write_bytes(bytes(data))
            named, expected = latest.name, "is damaged"
        elif damage == "renamed":
            snapshot_id = parse_snapshot_name(latest.name)
            assert snapshot_id is not None
            other = meta / f"{snapshot_id.offset + 1:020d}-{snapshot_id.epoch:010d}.checkpoint"
            latest.rename(other)
            named, expected = other.name, "not the one its name gives"
        else:
            (meta / "quorum-state").write_text('{"leaderEpoch": ')
            named, expected = "quorum-state", "quorum-state"
        with pytest.raises(NodeNotServing) as refused:
            cluster.restart(2, timeout=30)
        assert named in str(refused.value) and expected in str(refused.value)
        assert "cannot start" in node.log_path.read_text()
