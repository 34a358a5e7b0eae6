"""What a stopped node's metadata log tells: where several nodes' logs stop agreeing."""

from __future__ import annotations

from pathlib import Path

from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata.offline import METADATA_DIR, agreed_log_end, metadata_log_end
from brook.raft.partition_log import PartitionRaftLog


def _node(tmp_path: Path, name: str, batches: list[tuple[int, list[bytes]]]) -> Path:
    data = tmp_path / name
    plog = PartitionLog.open(data / METADATA_DIR, LogConfig.from_topic_config({}))
    raft = PartitionRaftLog(plog)
    for epoch, payloads in batches:
        raft.initialize_leader_epoch(epoch)
        raft.append_as_leader(payloads, epoch)
    plog.flush()
    plog.close_files()
    return data


def test_a_deposed_leaders_uncommitted_tail_is_not_agreed_on(tmp_path: Path) -> None:
    shared = [(1, [b"a", b"b"]), (1, [b"c"])]
    deposed = _node(tmp_path, "n1", [*shared, (1, [b"x", b"y"])])  # never replicated
    leader = _node(tmp_path, "n2", [*shared, (2, [b"d"]), (2, [b"e", b"f"])])
    follower = _node(tmp_path, "n3", [*shared, (2, [b"d"])])
    assert metadata_log_end(deposed) == 5
    assert agreed_log_end([deposed, leader, follower]) == 3
    assert agreed_log_end([leader, follower]) == 4  # the shorter log's end
    assert agreed_log_end([deposed]) == 5
