"""The metadata quorum on real processes (``brook cluster``): the active controller is killed
with SIGKILL while topics are being created, again and again; a new controller takes over,
admin requests work again, the killed node comes back, and at the end no topic whose creation
was acknowledged is missing and every node holds the same metadata image."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from metadata_checker import Creator, check_metadata
from quorum_support import FAST, wait_for
from support import local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.metadata.offline import metadata_image


def _create_works(cluster: LocalCluster) -> bool:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    name = "probe-" + uuid.uuid4().hex[:8]
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(5)
    return True


def _trials(cluster: LocalCluster, trials: int) -> Creator:
    creator = Creator(cluster.bootstrap_servers, pause=0.02)
    creator.start()
    try:
        epochs = []
        for _ in range(trials):
            quorum = wait_for("a quorum leader", cluster.describe_quorum)
            epochs.append(quorum.leader_epoch)
            before = len(creator.acked)
            wait_for("a topic created under this leader", lambda n=before: len(creator.acked) > n)
            cluster.kill(quorum.leader_id)

            def new_leader(old: int = quorum.leader_id) -> object:
                q = cluster.describe_quorum()
                return q if q is not None and q.leader_id != old else None

            new = wait_for("a new leader", new_leader)
            assert new.leader_epoch > quorum.leader_epoch
            wait_for("admin requests working again", lambda: _create_works(cluster))
            cluster.restart(quorum.leader_id)
    finally:
        creator.stop()
    assert creator.acked, "no topic was ever created"
    return creator


def _check_nothing_lost(cluster: LocalCluster, acked: list[str]) -> None:
    """Every acknowledged topic is listed by every broker, and once the cluster is stopped,
    every node's metadata image is the same where their logs agree, which covers every
    record committed before the stop."""
    verdict = check_metadata(cluster, acked, timeout=60)
    assert not verdict.missing, verdict.missing
    assert verdict.identical_images, verdict.digests
    assert set(acked) <= set(metadata_image(cluster.nodes[0].data_dir).topics)


@pytest.mark.parametrize(
    ("layout", "trials"),
    [({"nodes": 3}, 12), ({"controllers": 3, "brokers": 2}, 8)],
    ids=["combined", "separate-roles"],
)
def test_killing_the_active_controller_while_topics_are_created(
    tmp_path: Path, layout: dict[str, int], trials: int
) -> None:
    with local_cluster(tmp_path / "cluster", overrides=FAST, **layout) as cluster:  # type: ignore[arg-type]
        creator = _trials(cluster, trials)
        _check_nothing_lost(cluster, creator.acked)
