"""The rules Kafka defines on any replicated log: where a fetch position stands (valid,
diverging, or behind a snapshot) and where a follower truncates after a DivergingEpoch."""

from __future__ import annotations

import pytest

from brook.raft.log import Position, ValidatedPosition, truncation_offset, validate_offset_and_epoch
from brook.raft.memory_log import MemoryLog
from brook.raft.messages import OffsetAndEpoch


def build(*batches: tuple[int, int]) -> MemoryLog:
    log = MemoryLog()
    for epoch, count in batches:
        log.append_as_leader([b"r"] * count, epoch)
    log.flush()
    return log


LEADER = build((1, 3), (3, 2), (4, 1))  # 1@0, 3@3, 4@5; end 6


@pytest.mark.parametrize(
    ("offset", "epoch", "kind", "at"),
    [
        (0, 0, Position.VALID, (0, 0)),  # an empty follower of a log that starts at 0
        (3, 1, Position.VALID, (3, 1)),
        (6, 4, Position.VALID, (6, 4)),
        (2, 1, Position.VALID, (2, 1)),
        (4, 1, Position.DIVERGING, (3, 1)),  # epoch 1 ended at 3 here
        (5, 2, Position.DIVERGING, (3, 1)),  # epoch 2 never existed here
        (7, 4, Position.DIVERGING, (6, 4)),  # past the end
        (5, 5, Position.DIVERGING, (6, 4)),  # an epoch this log does not know yet
    ],
)
def test_positions_against_a_whole_log(
    offset: int, epoch: int, kind: Position, at: tuple[int, int]
) -> None:
    assert validate_offset_and_epoch(LEADER, offset, epoch) == ValidatedPosition(
        kind, OffsetAndEpoch(*at)
    )


def trimmed() -> MemoryLog:
    log = build((1, 3), (3, 2), (4, 1))
    log.create_snapshot(OffsetAndEpoch(5, 3), b"s")
    log.delete_before_snapshot(OffsetAndEpoch(5, 3))
    return log


@pytest.mark.parametrize(
    ("offset", "epoch", "kind"),
    [
        (2, 1, Position.SNAPSHOT),  # below the log start
        (5, 1, Position.SNAPSHOT),  # at the start with another epoch than the snapshot's
        (6, 2, Position.SNAPSHOT),  # an epoch older than the oldest snapshot
        (5, 3, Position.VALID),
        (6, 4, Position.VALID),
        (0, 0, Position.SNAPSHOT),
    ],
)
def test_positions_against_a_log_that_starts_at_a_snapshot(
    offset: int, epoch: int, kind: Position
) -> None:
    position = validate_offset_and_epoch(trimmed(), offset, epoch)
    assert position.kind is kind
    if kind is Position.SNAPSHOT:
        assert position.at == OffsetAndEpoch(5, 3)  # always the latest snapshot


@pytest.mark.parametrize(
    ("follower", "diverging", "cut"),
    [
        (((1, 3), (2, 2)), (3, 1), 3),  # same epoch end on both sides
        (((1, 2), (2, 3)), (4, 1), 2),  # ours ended earlier: cut at our end of it
        (((1, 5),), (3, 1), 3),  # ours ran longer: cut at the leader's end of it
        (((2, 4),), (2, 1), 0),  # we never had epoch 1: the end of our largest epoch below it
        (((1, 3),), (1, 0), 1),  # epoch 0: the smaller end
    ],
)
def test_truncation_after_a_diverging_epoch(
    follower: tuple[tuple[int, int], ...], diverging: tuple[int, int], cut: int
) -> None:
    assert truncation_offset(build(*follower), OffsetAndEpoch(*diverging)) == cut
