"""A broker paused until the others dropped the metadata log it needs catches up, once
resumed, by loading the leader's snapshot while it runs; what it hosts and serves follows the
new image from then on: a topic created afterwards on another broker is answered
NOT_LEADER_OR_FOLLOWER (a topic the broker knows, led elsewhere), not UNKNOWN_TOPIC_OR_PARTITION
as from the image it had before the snapshot."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

from rawclient import RawClient, produce
from support import local_cluster

from brook.client.admin import Admin, NewTopic
from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch

OVERRIDES = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "metadata.log.max.record.bytes.between.snapshots": "2048",
    "metadata.max.retention.bytes": "1",
}


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen in {timeout} s")
        time.sleep(0.1)


def _snapshots(node_dir: Path) -> list[Path]:
    return sorted((node_dir / "data" / "__cluster_metadata-0").glob("*.checkpoint"))


def test_image_replaced_by_a_snapshot_is_the_one_served(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=OVERRIDES) as cluster:
        live = ",".join(n.broker_address for n in cluster.brokers if n.node_id != 3)
        node3 = cluster.node(3)
        with Admin({"bootstrap.servers": live}) as admin:
            cluster.pause(3)
            names = [f"s-{uuid.uuid4().hex[:8]}" for _ in range(60)]
            for name in names:
                admin.create_topics([NewTopic(name, 1, 1)])
            wait_for("a snapshot on node 1", lambda: bool(_snapshots(cluster.node(1).directory)))
            before = {p.name for p in _snapshots(node3.directory)}
            cluster.resume(3)
            wait_for(
                "node 3 loaded a snapshot it fetched",
                lambda: bool({p.name for p in _snapshots(node3.directory)} - before),
            )
            with Admin({"bootstrap.servers": node3.broker_address}) as admin3:
                wait_for(
                    "node 3 knows every topic",
                    lambda: set(names) <= set(admin3.list_topics()),
                )
                admin.create_topics([NewTopic("after", replica_assignment={0: [1]})])
                wait_for("node 3 knows 'after'", lambda: "after" in admin3.list_topics())
        with RawClient(node3.broker_address) as client:
            resp = produce(client, "after", 0, build_simple_batch([(None, b"v")]))
        code = int(resp.responses[0].partition_responses[0].error_code)
        assert code == Errors.NOT_LEADER_OR_FOLLOWER, code
