"""``brook metadata-quorum``'s output against hand-made QuorumInfo: Kafka's --status lines (the
largest follower lag in offsets and ms, voters and observers with directory ids and
endpoints), its --replication table (padding, tabs, Leader / Follower / Observer, "N ms ago"),
and its argument checks."""

from __future__ import annotations

import argparse
import uuid

import pytest

from brook.cli.common import CommandError
from brook.cli.metadata_quorum import (
    REPLICATION_HEADERS,
    build_parser,
    check_describe,
    format_table,
    relative_time_ms,
    replication_rows,
    status_lines,
)
from brook.client.admin import QuorumInfo, QuorumNode, RaftVoterEndpoint, ReplicaState

ZERO = uuid.UUID(int=0)
DIRECTORY = uuid.UUID("5f1c4a1e-0000-4000-8000-00000000abcd")
DIRECTORY_TEXT = "XxxKHgAAQACAAAAAAACrzQ"  # Kafka's Uuid.toString of DIRECTORY
Z = "A" * 22  # Kafka's Uuid.ZERO_UUID as text

LEADER = ReplicaState(1, ZERO, 125, None, 5000)
FOLLOWER = ReplicaState(2, DIRECTORY, 120, 4990, 4980)
SLOW = ReplicaState(3, ZERO, 110, 4800, None)
OBSERVER = ReplicaState(4, ZERO, 100, 4900, 4000)

INFO = QuorumInfo(
    leader_id=1,
    leader_epoch=7,
    high_watermark=120,
    voters=(FOLLOWER, LEADER, SLOW),
    observers=(OBSERVER,),
    nodes={
        1: QuorumNode(1, (RaftVoterEndpoint("CONTROLLER", "c1", 9093),)),
        2: QuorumNode(
            2,
            (
                RaftVoterEndpoint("CONTROLLER", "fe80::1", 9094),
                RaftVoterEndpoint("SSL", "c2", 9095),
            ),
        ),
    },
)


def test_status_lines() -> None:
    assert status_lines("abc", INFO) == [
        "ClusterId:              abc",
        "LeaderId:               1",
        "LeaderEpoch:            7",
        "HighWatermark:          120",
        "MaxFollowerLag:         15",
        # The laggard (node 3) has no caught-up time.
        "MaxFollowerLagTimeMs:   -1",
        f'CurrentVoters:          [{{"id": 2, "directoryId": "{DIRECTORY_TEXT}", '
        '"endpoints": ["CONTROLLER://[fe80::1]:9094", "SSL://c2:9095"]}, '
        '{"id": 1, "endpoints": ["CONTROLLER://c1:9093"]}, {"id": 3}]',
        'CurrentObservers:       [{"id": 4}]',
    ]


def test_max_follower_lag_time_from_caught_up_times() -> None:
    info = QuorumInfo(1, 2, 125, (LEADER, FOLLOWER), ())
    lines = status_lines("abc", info)
    assert lines[4:6] == ["MaxFollowerLag:         5", "MaxFollowerLagTimeMs:   20"]


def test_a_lone_voter_lags_nothing() -> None:
    info = QuorumInfo(1, 1, 125, (LEADER,), ())
    lines = status_lines(None, info)
    assert lines[0] == "ClusterId:              None"
    assert lines[4:8] == [
        "MaxFollowerLag:         0",
        "MaxFollowerLagTimeMs:   0",
        'CurrentVoters:          [{"id": 1}]',
        "CurrentObservers:       []",
    ]


def test_the_first_voter_with_the_smallest_log_end_offset_is_the_laggard() -> None:
    # A follower as far as the leader, listed before it: Kafka compares with it.
    level = ReplicaState(2, ZERO, 125, 4990, 4000)
    info = QuorumInfo(1, 1, 125, (level, LEADER), ())
    assert status_lines("abc", info)[4:6] == [
        "MaxFollowerLag:         0",
        "MaxFollowerLagTimeMs:   1000",
    ]


def test_no_leader_among_the_voters_is_a_clear_error() -> None:
    info = QuorumInfo(-1, 3, 10, (FOLLOWER,), ())
    with pytest.raises(CommandError, match=r"no leader among its voters \(LeaderId -1"):
        status_lines("abc", info)
    with pytest.raises(CommandError, match="no leader"):
        replication_rows(info, False, 0)


def test_replication_table() -> None:
    text = format_table(REPLICATION_HEADERS, replication_rows(INFO, False, 6000))
    assert text.split("\n") == [
        "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\t"
        "LastCaughtUpTimestamp\tStatus  \t",
        f"1     \t{Z}\t125         \t0  \t-1                \t5000                 \tLeader  \t",
        f"2     \t{DIRECTORY_TEXT}\t120         \t5  \t4990              \t4980                 \t"
        "Follower\t",
        f"3     \t{Z}\t110         \t15 \t4800              \t-1                   \tFollower\t",
        f"4     \t{Z}\t100         \t25 \t4900              \t4000                 \tObserver\t",
        "",
    ]


def test_replication_table_human_readable() -> None:
    rows = replication_rows(INFO, True, 6000)
    assert [row[4:] for row in rows] == [
        ["-1", "1000 ms ago", "Leader"],
        ["1010 ms ago", "1020 ms ago", "Follower"],
        ["1200 ms ago", "-1", "Follower"],
        ["1100 ms ago", "2000 ms ago", "Observer"],
    ]
    assert format_table(REPLICATION_HEADERS, rows).split("\n")[1] == (
        f"1     \t{Z}\t125         \t0  \t-1                \t1000 ms ago          \tLeader  \t"
    )


@pytest.mark.parametrize("timestamp", [6001, 0])
def test_a_timestamp_outside_epoch_to_now_is_kafkas_clock_drift_error(timestamp: int) -> None:
    with pytest.raises(CommandError) as info:
        relative_time_ms(timestamp, "last fetch", 6000)
    assert str(info.value) == (
        "Error while computing relative time, possible drift in system clock.\n"
        f"Current timestamp is 6000, last fetch timestamp is {timestamp}"
    )
    assert relative_time_ms(6000, "last fetch", 6000) == 0


def describe_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["--bootstrap-server", "h:1", "describe", *argv])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--status", "--replication"],
            "Only one of --status or --replication should be specified with describe sub-command",
        ),
        (
            ["--status", "--human-readable"],
            "The option --human-readable is only supported along with --replication",
        ),
        ([], "One of --status or --replication must be specified with describe sub-command"),
        (["--human-readable"], "One of --status or --replication must be specified"),
    ],
)
def test_describe_checks(argv: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        check_describe(describe_args(*argv))


def test_describe_flags_and_their_prefixes() -> None:
    check_describe(describe_args("--status"))
    args = describe_args("--re", "--hu")  # argparse4j and argparse both take prefixes
    assert (args.replication, args.human_readable, args.status) == (True, True, False)
    check_describe(args)
