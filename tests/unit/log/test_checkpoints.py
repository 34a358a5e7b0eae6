"""Kafka's text checkpoint files, partition.metadata and meta.properties."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from brook.log.checkpoints import (
    CheckpointError,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    PartitionMetadataFile,
    read_properties,
    topic_id_from_string,
    topic_id_to_string,
    write_atomically,
    write_properties,
)


def test_offset_checkpoint_uses_kafkas_format(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    checkpoint = OffsetCheckpointFile(path)
    checkpoint.write({("my-topic.v2", 3): 120, ("a", 0): 7})
    assert path.read_text() == "0\n2\na 0 7\nmy-topic.v2 3 120\n"
    assert checkpoint.read() == {("my-topic.v2", 3): 120, ("a", 0): 7}


def test_missing_checkpoint_reads_empty(tmp_path: Path) -> None:
    assert OffsetCheckpointFile(tmp_path / "none").read() == {}
    assert LeaderEpochCheckpointFile(tmp_path / "none").read() is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1\n0\n",
        "0\n2\na 0 7\n",
        "0\n1\na 0\n",
        "0\nx\n",
        "0\n1\na b 7\n",
    ],
)
def test_malformed_offset_checkpoint_is_rejected(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CheckpointError):
        OffsetCheckpointFile(path).read()


def test_leader_epoch_checkpoint_format(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    LeaderEpochCheckpointFile(path).write([(0, 0), (4, 120)])
    assert path.read_text() == "0\n2\n0 0\n4 120\n"
    assert LeaderEpochCheckpointFile(path).read() == [(0, 0), (4, 120)]
    path.write_bytes(b"0\n2\n0 0\n4 1\xff0\n")
    with pytest.raises(CheckpointError):
        LeaderEpochCheckpointFile(path).read()


def test_atomic_write_replaces_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "file"
    write_atomically(path, b"one")
    write_atomically(path, b"two")
    assert path.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_topic_id_text_is_kafkas_base64url_without_padding() -> None:
    topic_id = uuid.UUID("f6c5a3b1-4b4d-4c7e-9f3c-0d6f6a7b8c9d")
    text = topic_id_to_string(topic_id)
    assert "=" not in text and len(text) == 22
    assert topic_id_from_string(text) == topic_id
    # Kafka prints Uuid(-1, -1) this way: all ones in URL-safe base64.
    assert topic_id_to_string(uuid.UUID(int=2**128 - 1)) == "_____________________w"
    with pytest.raises(CheckpointError):
        topic_id_from_string("not a topic id!")


def test_partition_metadata_file(tmp_path: Path) -> None:
    path = tmp_path / "partition.metadata"
    meta = PartitionMetadataFile(path)
    assert meta.read() is None
    topic_id = uuid.uuid4()
    meta.write(topic_id)
    assert path.read_text() == f"version: 0\ntopic_id: {topic_id_to_string(topic_id)}\n"
    assert meta.read() == topic_id
    path.write_text("version: 1\ntopic_id: x\n")
    with pytest.raises(CheckpointError):
        meta.read()


def test_properties_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "meta.properties"
    assert read_properties(path) == {}
    write_properties(path, {"version": "1", "node.id": "3", "cluster.id": "abc-DEF_1"})
    assert path.read_text() == "version=1\nnode.id=3\ncluster.id=abc-DEF_1\n"
    assert read_properties(path) == {"version": "1", "node.id": "3", "cluster.id": "abc-DEF_1"}
