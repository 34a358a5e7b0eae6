"""The core's message values: positions compare epoch first, the quorum's error codes are
Kafka's, and the timings' defaults are Kafka's."""

from __future__ import annotations

import pytest

from brook.raft.config import RaftConfig
from brook.raft.messages import Errors, OffsetAndEpoch, VoteRequest, error_name


def test_positions_compare_epoch_first() -> None:
    assert OffsetAndEpoch(1, 3) > OffsetAndEpoch(100, 2)
    assert OffsetAndEpoch(5, 2) >= OffsetAndEpoch(5, 2)
    assert OffsetAndEpoch(4, 2) < OffsetAndEpoch(5, 2)
    assert OffsetAndEpoch(4, 2) <= OffsetAndEpoch(4, 2)
    assert max([OffsetAndEpoch(9, 1), OffsetAndEpoch(2, 4)]) == OffsetAndEpoch(2, 4)


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("BROKER_NOT_AVAILABLE", 8),
        ("INVALID_REQUEST", 42),
        ("FENCED_LEADER_EPOCH", 74),
        ("UNKNOWN_LEADER_EPOCH", 75),
        ("SNAPSHOT_NOT_FOUND", 98),
        ("POSITION_OUT_OF_RANGE", 99),
        ("INCONSISTENT_CLUSTER_ID", 104),
        ("INVALID_VOTER_KEY", 125),
    ],
)
def test_error_codes_are_kafka_s(name: str, code: int) -> None:
    assert getattr(Errors, name) == code
    assert error_name(code) == name


def test_requests_are_immutable_values() -> None:
    request = VoteRequest("c", 1, 2, 1, 5, pre_vote=True)
    with pytest.raises(AttributeError):
        request.replica_epoch = 3  # type: ignore[misc]
    assert (
        request.topic == "__cluster_metadata" and request.partition == 0 and request.voter_id == -1
    )


def test_timing_defaults_are_kafka_s() -> None:
    config = RaftConfig()
    assert (config.election_timeout_ms, config.fetch_timeout_ms) == (1000, 2000)
    assert (config.election_backoff_max_ms, config.request_timeout_ms) == (1000, 2000)
    assert (config.fetch_max_wait_ms, config.fetch_max_bytes) == (500, 8 * 1024 * 1024)
    assert config.check_quorum_timeout_ms == 3000
    assert config.begin_quorum_epoch_interval_ms == 1000


def test_negative_timings_are_refused() -> None:
    with pytest.raises(ValueError, match="fetch_timeout_ms"):
        RaftConfig(fetch_timeout_ms=-1)
