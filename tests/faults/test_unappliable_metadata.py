"""A data directory whose metadata log holds what Brook before its reserved-name check let a
client commit: a topic named ``__cluster_metadata`` (the metadata log's own directory), and a
partition of a topic that does not exist. A real broker starts on it (such records are logged
and skipped, never a reason to refuse to start), serves the topics it had, and refuses the
reserved name as Kafka does."""

from __future__ import annotations

import uuid
from pathlib import Path

from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess

from brook.log.checkpoints import PartitionMetadataFile
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata import records as rec
from brook.metadata.quorum import LocalQuorum
from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch, iter_records

METADATA_DIR = "__cluster_metadata-0"


def _commit_as_before(data: Path, records: list[rec.MetadataRecord]) -> None:
    """Append records to the stopped node's metadata log, as its controller once did."""
    log = PartitionLog.open(data / METADATA_DIR, LogConfig.from_topic_config({}))
    try:
        quorum = LocalQuorum(log, 1)
        quorum.append(quorum.epoch, [rec.encode(r) for r in records])
        log.flush()
    finally:
        log.close()


def _create(c: RawClient, name: str) -> object:
    resp = c.request(
        19,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout": 30000,
            "validate_only": False,
        },
    )
    return resp.topics[0]


def _topics(c: RawClient) -> set[str]:
    meta = c.request(
        3,
        12,
        {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    return {t.name for t in meta.topics}


def test_a_node_starts_on_a_metadata_log_with_records_it_cannot_apply(tmp_path: Path) -> None:
    data = tmp_path / "data"
    values = [b"v%d" % i for i in range(5)]
    broker = BrookProcess(data)
    with broker:
        with RawClient(broker.bootstrap) as c:
            create_topic(c, "kept")
            resp = produce(c, "kept", 0, build_simple_batch(values))
            assert resp.responses[0].partition_responses[0].error_code == 0
        assert broker.stop() == 0

        _commit_as_before(
            data,
            [
                rec.TopicRecord("__cluster_metadata", reserved := uuid.uuid4()),
                rec.PartitionRecord(reserved, 0, (1,), (1,), 1),
                rec.PartitionRecord(uuid.uuid4(), 0, (1,), (1,), 1),
            ],
        )

        for _ in range(2):  # and again after a clean restart
            broker.start()
            with RawClient(broker.bootstrap) as c:
                assert _topics(c) == {"kept"}
                part = fetch(c, "kept", 0, 0).responses[0].partitions[0]
                assert [r.value for _, r in iter_records(part.records)][:5] == values
                refused = _create(c, "__cluster_metadata")
                assert (refused.error_code, refused.error_message) == (
                    Errors.INVALID_REQUEST,
                    "Creation of internal topic __cluster_metadata is prohibited.",
                )
                resp = produce(c, "kept", 0, build_simple_batch([b"more"]))
                assert resp.responses[0].partition_responses[0].error_code == 0
            assert broker.stop() == 0
        assert "skipping metadata record" in broker.log()
        stored = PartitionMetadataFile(data / METADATA_DIR / "partition.metadata").read()
        assert stored == rec.METADATA_TOPIC_ID


def test_creating_the_metadata_topic_is_refused_and_the_node_restarts(tmp_path: Path) -> None:
    broker = BrookProcess(tmp_path / "data")
    with broker:
        with RawClient(broker.bootstrap) as c:
            refused = _create(c, "__cluster_metadata")
            assert refused.error_code == Errors.INVALID_REQUEST
            assert _topics(c) == set()
        assert broker.stop() == 0
        broker.start()
        with RawClient(broker.bootstrap) as c:
            create_topic(c, "after")
            assert _topics(c) == {"after"}
