"""The ``quorum-state`` file: Kafka's JSON (data_version 0), atomic replacement, and clear
errors naming the file when it is truncated or corrupt."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from brook.raft.quorum_state import (
    ElectionState,
    FileQuorumStateStore,
    MemoryQuorumStateStore,
    QuorumStateError,
)

KAFKA_LINE = (
    '{"clusterId":"","leaderId":2,"leaderEpoch":7,"votedId":3,"appliedOffset":0,'
    '"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}'
)


def test_written_as_kafka_writes_it(tmp_path: Path) -> None:
    store = FileQuorumStateStore(tmp_path / "quorum-state")
    store.write(ElectionState(7, leader_id=2, voted_id=3, voters=(3, 1, 2)))
    assert (tmp_path / "quorum-state").read_text() == KAFKA_LINE
    assert not (tmp_path / "quorum-state.tmp").exists()


def test_read_back(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    path.write_text(KAFKA_LINE)
    assert FileQuorumStateStore(path).read() == ElectionState(7, 2, 3, (1, 2, 3))


def test_a_missing_file_is_no_state(tmp_path: Path) -> None:
    assert FileQuorumStateStore(tmp_path / "quorum-state").read() is None


def test_kafka_s_dynamic_quorum_version_is_read_too(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    path.write_text(
        '{"leaderId":-1,"leaderEpoch":3,"votedId":1,'
        '"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
    )
    assert FileQuorumStateStore(path).read() == ElectionState(3, -1, 1, ())


def test_each_write_replaces_the_whole_file(tmp_path: Path) -> None:
    store = FileQuorumStateStore(tmp_path / "quorum-state")
    store.write(ElectionState(7, leader_id=2, voters=(1, 2, 3)))
    store.write(ElectionState(8, voters=(1, 2, 3)))
    assert store.read() == ElectionState(8, voters=(1, 2, 3))
    assert os.listdir(tmp_path) == ["quorum-state"]


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        (b"", "empty"),
        (KAFKA_LINE[:40].encode(), "not valid JSON"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"[1, 2, 3]", "not a JSON object"),
        (b'{"leaderId":1,"leaderEpoch":2,"votedId":-1}', "no data_version"),
        (KAFKA_LINE.replace('"data_version":0', '"data_version":7').encode(), "data_version 7"),
        (KAFKA_LINE.replace('"leaderEpoch":7,', "").encode(), "no leaderEpoch"),
        (KAFKA_LINE.replace('"leaderEpoch":7', '"leaderEpoch":"7"').encode(), "leaderEpoch is not"),
        (KAFKA_LINE.replace('"leaderEpoch":7', '"leaderEpoch":-2').encode(), "negative"),
        (KAFKA_LINE.replace('{"voterId":1}', '{"id":1}').encode(), "no voterId"),
    ],
)
def test_an_unreadable_file_is_an_error_naming_it(
    tmp_path: Path, content: bytes, complaint: str
) -> None:
    path = tmp_path / "quorum-state"
    path.write_bytes(content)
    with pytest.raises(QuorumStateError, match=complaint) as raised:
        FileQuorumStateStore(path).read()
    assert str(path) in str(raised.value)


def test_the_memory_store_counts_its_writes() -> None:
    store = MemoryQuorumStateStore()
    assert store.read() is None
    store.write(ElectionState(1))
    store.write(ElectionState(2))
    assert store.read() == ElectionState(2) and store.writes == 2


def test_json_fields_are_kafka_s() -> None:
    data = json.loads(ElectionState(1, voters=(1,)).to_json())
    assert list(data) == [
        "clusterId",
        "leaderId",
        "leaderEpoch",
        "votedId",
        "appliedOffset",
        "currentVoters",
        "data_version",
    ]


def test_the_new_state_is_fsynced_before_the_rename_and_the_directory_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    paths: dict[int, str] = {}
    real_open, real_fsync, real_replace = os.open, os.fsync, os.replace

    def opened(path: str | os.PathLike[str], flags: int, *args: int) -> int:
        fd = real_open(path, flags, *args)
        paths[fd] = Path(path).name
        return fd

    def fsynced(fd: int) -> None:
        events.append(f"fsync {paths.get(fd)}")
        real_fsync(fd)

    def replaced(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        events.append(f"rename {Path(src).name} -> {Path(dst).name}")
        real_replace(src, dst)

    monkeypatch.setattr(os, "open", opened)
    monkeypatch.setattr(os, "fsync", fsynced)
    monkeypatch.setattr(os, "replace", replaced)
    FileQuorumStateStore(tmp_path / "quorum-state").write(ElectionState(1, voters=(1,)))
    assert events == [
        "fsync quorum-state.tmp",
        "rename quorum-state.tmp -> quorum-state",
        f"fsync {tmp_path.name}",
    ]
