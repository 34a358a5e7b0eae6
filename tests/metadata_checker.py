"""The metadata loss check of the controller-failover test and benchmark: a background
creator of topics while controllers are killed, then every acknowledged topic must be listed
by every broker and, once the cluster is stopped, every node must hold the same metadata
image where the logs agree (never below what was committed before the stop).

Used by ``tests/integration/cluster/test_quorum_failover.py`` and
``bench/controller_failover.py``."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient, NewTopic

from brook.cli.local_cluster import LocalCluster


class Creator(threading.Thread):
    """Creates topics one after another through any broker, recording those acknowledged;
    ``pause`` seconds between two keeps the count (and the logs every restart loads) modest."""

    def __init__(self, bootstrap: str, pause: float) -> None:
        super().__init__(daemon=True)
        self.pause = pause
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 3000})
        self.acked: list[str] = []
        self.failed = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            name = "c-" + uuid.uuid4().hex[:10]
            try:
                future = self.admin.create_topics([NewTopic(name, 1, 1)], operation_timeout=5)
                future[name].result(10)
            except Exception:
                self.failed += 1  # in flight while the controller died: maybe, maybe not
            else:
                self.acked.append(name)
            self.stopping.wait(self.pause)

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)


@dataclass
class MetadataVerdict:
    missing: dict[int, set[str]]  # acknowledged topics a broker does not list, by broker
    digests: dict[int, str]  # each node's image digest once stopped

    @property
    def identical_images(self) -> bool:
        return len(set(self.digests.values())) == 1


def check_metadata(cluster: LocalCluster, acked: list[str], timeout: float) -> MetadataVerdict:
    """Wait (up to ``timeout`` s a broker) for every broker to list every acknowledged
    topic, then stop the cluster and compare the nodes' images."""
    committed = cluster.wait_metadata_caught_up().high_watermark
    missing: dict[int, set[str]] = {}
    for node in cluster.brokers:
        admin = AdminClient({"bootstrap.servers": node.broker_address})
        deadline = time.monotonic() + timeout
        while True:
            gone = set(acked) - set(admin.list_topics(timeout=10).topics)
            if not gone or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if gone:
            missing[node.node_id] = gone
    cluster.stop()
    return MetadataVerdict(missing, cluster.metadata_digests(committed))
