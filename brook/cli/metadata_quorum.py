"""``brook metadata-quorum``: the KRaft metadata quorum, as kafka-metadata-quorum.sh
(MetadataQuorumCommand) prints it.

    brook metadata-quorum --bootstrap-server 127.0.0.1:9092 describe --status
    brook metadata-quorum --bootstrap-server 127.0.0.1:9092 describe --replication --human-readable

``--status`` prints Kafka's summary lines (ClusterId from DescribeCluster, the rest from
DescribeQuorum: leader, epoch, high watermark, the largest follower lag in offsets and in ms,
voters and observers with their directory ids and endpoints); ``--replication`` prints a row
per replica (Leader, then Follower voters, then Observers) in Kafka's tab-separated table.
The formatting is pure functions over ``QuorumInfo`` so it is checked without a broker.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Sequence

from brook.client.admin import Admin
from brook.client.admin.types import QuorumInfo, RaftVoterEndpoint, ReplicaState

from .common import (
    CommandError,
    ToolParser,
    client_properties,
    format_table,
    kafka_uuid,
    parse_args,
    run,
)

REPLICATION_HEADERS = (
    "NodeId",
    "DirectoryId",
    "LogEndOffset",
    "Lag",
    "LastFetchTimestamp",
    "LastCaughtUpTimestamp",
    "Status",
)
_ZERO_UUID = uuid.UUID(int=0)


def build_parser() -> ToolParser:
    p = ToolParser(
        prog="brook metadata-quorum",
        description="This tool describes kraft metadata quorum status.",
    )
    p.add_argument(
        "--bootstrap-server",
        required=True,
        metavar="BOOTSTRAP_SERVER",
        help="A comma-separated list of host:port pairs to use for establishing the connection "
        "to the Kafka cluster.",
    )
    p.add_argument(
        "--command-config",
        metavar="COMMAND_CONFIG",
        help="Property file containing configs to be passed to Admin Client.",
    )
    commands = p.add_subparsers(dest="command", metavar="{describe}")
    commands.required = True
    describe = commands.add_parser("describe", help="Describe the metadata quorum info")
    status = describe.add_argument_group("Status")
    status.add_argument(
        "--status",
        action="store_true",
        help="A short summary of the quorum status and the other provides detailed information "
        "about the status of replication.",
    )
    replication = describe.add_argument_group("Replication")
    replication.add_argument(
        "--replication",
        action="store_true",
        help="Detailed information about the status of replication",
    )
    replication.add_argument("--human-readable", action="store_true", help="Human-readable output")
    return p


def check_describe(args: argparse.Namespace) -> None:
    """Kafka's checks, in its order, with its messages."""
    if args.status and args.replication:
        raise CommandError(
            "Only one of --status or --replication should be specified with describe sub-command"
        )
    if args.status and args.human_readable:
        raise CommandError("The option --human-readable is only supported along with --replication")
    if not args.status and not args.replication:
        raise CommandError(
            "One of --status or --replication must be specified with describe sub-command"
        )


# ---------------------------------------------------------------------------------------------
# --status
# ---------------------------------------------------------------------------------------------


def leader_of(info: QuorumInfo) -> ReplicaState:
    """The voter that leads; a clear error when the answer names none (Kafka's tool fails on
    it too)."""
    for voter in info.voters:
        if voter.replica_id == info.leader_id:
            return voter
    raise CommandError(
        f"The metadata quorum has no leader among its voters (LeaderId {info.leader_id}, "
        f"LeaderEpoch {info.leader_epoch})"
    )


def status_lines(cluster_id: str | None, info: QuorumInfo) -> list[str]:
    """``describe --status``: Kafka's eight lines."""
    leader = leader_of(info)
    # Kafka takes the first voter with the smallest log end offset.
    laggard = min(info.voters, key=lambda r: r.log_end_offset)
    max_lag = leader.log_end_offset - laggard.log_end_offset
    if laggard is leader:
        max_lag_ms = 0
    elif (
        leader.last_caught_up_timestamp is not None and laggard.last_caught_up_timestamp is not None
    ):
        max_lag_ms = leader.last_caught_up_timestamp - laggard.last_caught_up_timestamp
    else:
        max_lag_ms = -1
    return [
        f"ClusterId:              {cluster_id}",
        f"LeaderId:               {info.leader_id}",
        f"LeaderEpoch:            {info.leader_epoch}",
        f"HighWatermark:          {info.high_watermark}",
        f"MaxFollowerLag:         {max_lag}",
        f"MaxFollowerLagTimeMs:   {max_lag_ms}",
        f"CurrentVoters:          {replica_list(info, info.voters)}",
        f"CurrentObservers:       {replica_list(info, info.observers)}",
    ]


def replica_list(info: QuorumInfo, replicas: Sequence[ReplicaState]) -> str:
    """``[{"id": 1, "directoryId": "...", "endpoints": ["CONTROLLER://host:9093"]}, ...]``:
    the directory id only when the replica has one, endpoints only when known (v2)."""
    return "[" + ", ".join(_replica_text(info, r) for r in replicas) + "]"


def _replica_text(info: QuorumInfo, replica: ReplicaState) -> str:
    text = f'{{"id": {replica.replica_id}'
    if replica.replica_directory_id != _ZERO_UUID:
        text += f', "directoryId": "{kafka_uuid(replica.replica_directory_id)}"'
    node = info.nodes.get(replica.replica_id)
    endpoints: tuple[RaftVoterEndpoint, ...] = node.endpoints if node is not None else ()
    if endpoints:
        text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in endpoints) + "]"
    return text + "}"


# ---------------------------------------------------------------------------------------------
# --replication
# ---------------------------------------------------------------------------------------------


def replication_rows(info: QuorumInfo, human_readable: bool, now_ms: int) -> list[list[str]]:
    """``describe --replication``: the leader, the other voters, then the observers."""
    leader = leader_of(info)
    followers = [v for v in info.voters if v.replica_id != info.leader_id]
    return [
        *(_row(leader, r, "Leader", human_readable, now_ms) for r in (leader,)),
        *(_row(leader, r, "Follower", human_readable, now_ms) for r in followers),
        *(_row(leader, r, "Observer", human_readable, now_ms) for r in info.observers),
    ]


def _row(
    leader: ReplicaState, r: ReplicaState, status: str, human_readable: bool, now_ms: int
) -> list[str]:
    return [
        str(r.replica_id),
        kafka_uuid(r.replica_directory_id),
        str(r.log_end_offset),
        str(leader.log_end_offset - r.log_end_offset),
        _timestamp(r.last_fetch_timestamp, "last fetch", human_readable, now_ms),
        _timestamp(r.last_caught_up_timestamp, "last caught up", human_readable, now_ms),
        status,
    ]


def _timestamp(value: int | None, what: str, human_readable: bool, now_ms: int) -> str:
    if value is None:
        return "-1"
    if not human_readable:
        return str(value)
    return f"{relative_time_ms(value, what, now_ms)} ms ago"


def relative_time_ms(timestamp_ms: int, what: str, now_ms: int) -> int:
    """How long ago ``timestamp_ms`` was; Kafka's error when it is not in (epoch, now]."""
    if not 0 < timestamp_ms <= now_ms:
        raise CommandError(
            "Error while computing relative time, possible drift in system clock.\n"
            f"Current timestamp is {now_ms}, {what} timestamp is {timestamp_ms}"
        )
    return now_ms - timestamp_ms


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)

    def body() -> None:
        check_describe(args)
        props = client_properties(args.bootstrap_server, args.command_config)
        with Admin(props) as admin:
            if args.status:
                cluster_id = admin.describe_cluster().cluster_id
                text = "\n".join(status_lines(cluster_id, admin.describe_metadata_quorum())) + "\n"
            else:
                info = admin.describe_metadata_quorum()
                now_ms = int(time.time() * 1000)
                rows = replication_rows(info, args.human_readable, now_ms)
                text = format_table(REPLICATION_HEADERS, rows)
        print(text, end="")

    return run(body)
