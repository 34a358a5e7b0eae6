"""``brook transactions``: the transactional state of producers in the cluster, and the way
out of a hanging transaction, as kafka-transactions.sh (TransactionsCommand) has them.

    brook transactions --bootstrap-server 127.0.0.1:9092 list [--duration-filter MS]
    brook transactions --bootstrap-server 127.0.0.1:9092 describe --transactional-id ID
    brook transactions --bootstrap-server 127.0.0.1:9092 describe-producers --topic T \\
        --partition P [--broker-id B]
    brook transactions --bootstrap-server 127.0.0.1:9092 find-hanging \\
        (--broker-id B | --topic T [--partition P]) [--max-transaction-timeout MINUTES]
    brook transactions --bootstrap-server 127.0.0.1:9092 abort --topic T --partition P \\
        (--start-offset O | --producer-id I --producer-epoch E --coordinator-epoch C)

A *hanging* transaction is one open on a partition (DescribeProducers shows where it began)
that its coordinator will never end: no coordinator knows the producer id any more, or the
coordinator's transaction no longer includes that partition. It holds the partition's last
stable offset, so read_committed consumers stop there. ``find-hanging`` finds them as Kafka's
tool does (open for longer than ``--max-transaction-timeout`` minutes since the producer's
last write, then checked against ListTransactions and DescribeTransactions); ``abort`` writes
the ABORT marker the coordinator never sent.

Tables are Kafka's (column padded, each value followed by a tab); the decisions are pure
functions over the admin client's values so they are checked without a broker.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from brook.client.admin import (
    AbortTransactionSpec,
    Admin,
    AdminError,
    ProducerState,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)
from brook.protocol.errors import Errors, KafkaError

from .common import CommandError, ToolParser, client_properties, format_table, parse_args, run

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = (
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
)
PRODUCER_HEADERS = (
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
)
HANGING_HEADERS = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)
# Kafka's tool asks about at most this many topics / partitions per request.
MAX_BATCH_SIZE = 500


def _int16(text: str) -> int:
    value = int(text)
    if not -(1 << 15) <= value < (1 << 15):
        raise argparse.ArgumentTypeError(f"{text} is not a 16-bit integer")
    return value


def build_parser() -> ToolParser:
    p = ToolParser(
        prog="brook transactions",
        description="This tool is used to analyze the transactional state of producers in the "
        "cluster. It can be used to detect and recover from hanging transactions.",
    )
    p.add_argument(
        "--command-config",
        metavar="FILE",
        help="property file containing configs to be passed to admin client",
    )
    p.add_argument(
        "--bootstrap-server",
        required=True,
        metavar="host:port",
        help="hostname and port for the broker to connect to, in the form `host:port` "
        "(multiple comma-separated entries can be given)",
    )
    commands = p.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    commands.required = True

    listing = commands.add_parser("list", help="list transactions")
    listing.add_argument(
        "--duration-filter",
        type=int,
        metavar="MS",
        help="Duration (in millis) to filter by: if < 0, all transactions will be returned; "
        "otherwise, only transactions running longer than this duration will be returned",
    )

    describe = commands.add_parser(
        "describe",
        help="describe the state of an active transactional-id",
        description="Describe the state of an active transactional-id.",
    )
    describe.add_argument("--transactional-id", required=True, help="transactional id")

    producers = commands.add_parser(
        "describe-producers", help="describe the states of active producers for a topic partition"
    )
    producers.add_argument(
        "--broker-id",
        type=int,
        help="optional broker id to describe the producer state on a specific replica",
    )
    producers.add_argument("--topic", required=True, help="topic name")
    producers.add_argument("--partition", type=int, required=True, help="partition number")

    abort = commands.add_parser(
        "abort", help="abort a hanging transaction (requires administrative privileges)"
    )
    abort.add_argument("--topic", required=True, help="topic name")
    abort.add_argument("--partition", type=int, required=True, help="partition number")
    newer = abort.add_argument_group(
        "Brokers on versions 3.0 and above",
        "For newer brokers, only the start offset of the transaction to be aborted is required",
    )
    newer.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    older = abort.add_argument_group(
        "Brokers on versions older than 3.0",
        "For older brokers, you must provide all of these arguments",
    )
    older.add_argument("--producer-id", type=int, help="producer id")
    older.add_argument("--producer-epoch", type=_int16, help="producer epoch")
    older.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")

    hanging = commands.add_parser("find-hanging", help="find hanging transactions")
    hanging.add_argument(
        "--broker-id", type=int, help="broker id to search for hanging transactions"
    )
    hanging.add_argument(
        "--max-transaction-timeout",
        type=int,
        default=15,
        metavar="MINUTES",
        help="maximum transaction timeout in minutes to limit the scope of the search",
    )
    hanging.add_argument("--topic", help="topic name to limit search to")
    hanging.add_argument("--partition", type=int, help="partition number")
    return p


# ---------------------------------------------------------------------------------------------
# Rows (pure)
# ---------------------------------------------------------------------------------------------


def partition_text(tp: TopicPartition) -> str:
    """A partition as Kafka's TopicPartition.toString writes it: ``orders-0``."""
    return f"{tp.topic}-{tp.partition}"


def list_rows(by_broker: Mapping[int, Sequence[TransactionListing]]) -> list[list[str]]:
    """``list``: a row per transactional id, with the broker that coordinates it."""
    return [
        [t.transactional_id, str(broker), str(t.producer_id), t.state]
        for broker, listings in sorted(by_broker.items())
        for t in listings
    ]


def describe_row(tid: str, d: TransactionDescription, now_ms: int) -> list[str]:
    """``describe``: the one row; start and duration are None when no transaction runs."""
    start = d.transaction_start_time_ms
    return [
        str(d.coordinator_id),
        tid,
        str(d.producer_id),
        str(d.producer_epoch),
        d.state,
        str(d.transaction_timeout_ms),
        "None" if start is None else str(start),
        "None" if start is None else str(now_ms - start),
        ",".join(partition_text(tp) for tp in sorted(d.topic_partitions)),
    ]


def producer_rows(producers: Iterable[ProducerState]) -> list[list[str]]:
    """``describe-producers``: a row per producer the replica knows."""
    return [
        [
            str(p.producer_id),
            str(p.producer_epoch),
            str(-1 if p.coordinator_epoch is None else p.coordinator_epoch),
            str(p.last_sequence),
            str(p.last_timestamp),
            "None"
            if p.current_transaction_start_offset is None
            else str(p.current_transaction_start_offset),
        ]
        for p in producers
    ]


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    """A producer with a transaction open on a partition."""

    topic_partition: TopicPartition
    producer: ProducerState


def candidate_open_transactions(
    producers: Mapping[TopicPartition, Sequence[ProducerState]], now_ms: int, max_timeout_ms: int
) -> list[OpenTransaction]:
    """Open transactions whose producer last wrote longer than ``max_timeout_ms`` ago: any
    transaction the coordinator still runs would have been aborted by its timeout since."""
    return [
        OpenTransaction(tp, p)
        for tp, states in producers.items()
        for p in states
        if p.current_transaction_start_offset is not None
        and now_ms - p.last_timestamp > max_timeout_ms
    ]


def hanging_transactions(
    candidates: Sequence[OpenTransaction],
    transactional_ids: Mapping[int, str],
    descriptions: Mapping[str, TransactionDescription | None],
) -> list[OpenTransaction]:
    """Kafka's rule: a candidate hangs when no coordinator lists its producer id, when its
    transactional id is not found, or when the coordinator's transaction does not include the
    partition (it will never send that partition a marker)."""
    out: list[OpenTransaction] = []
    for candidate in candidates:
        tid = transactional_ids.get(candidate.producer.producer_id)
        description = descriptions.get(tid) if tid is not None else None
        if description is None or candidate.topic_partition not in description.topic_partitions:
            out.append(candidate)
    return out


def hanging_rows(hanging: Iterable[OpenTransaction], now_ms: int) -> list[list[str]]:
    rows = []
    for t in hanging:
        p = t.producer
        rows.append(
            [
                t.topic_partition.topic,
                str(t.topic_partition.partition),
                str(p.producer_id),
                str(p.producer_epoch),
                str(-1 if p.coordinator_epoch is None else p.coordinator_epoch),
                str(
                    -1
                    if p.current_transaction_start_offset is None
                    else p.current_transaction_start_offset
                ),
                str(p.last_timestamp),
                str((now_ms - p.last_timestamp) // 60_000),
            ]
        )
    return rows


def abort_spec_at(
    tp: TopicPartition, producers: Iterable[ProducerState], start_offset: int
) -> AbortTransactionSpec:
    """``abort --start-offset``: the producer whose open transaction starts there, under the
    coordinator epoch of the last marker it got (0 when it never got one)."""
    for p in producers:
        if p.current_transaction_start_offset == start_offset:
            return AbortTransactionSpec(
                tp,
                p.producer_id,
                p.producer_epoch,
                p.coordinator_epoch if p.coordinator_epoch is not None else 0,
            )
    raise CommandError(
        f"Could not find any open transactions starting at offset {start_offset} on partition "
        f"{partition_text(tp)}"
    )


def abort_spec_given(tp: TopicPartition, args: argparse.Namespace) -> AbortTransactionSpec:
    """``abort --producer-id --producer-epoch --coordinator-epoch``, checked in Kafka's order;
    a negative coordinator epoch (a producer that never got a marker) becomes 0, which no
    coordinator epoch is below."""
    if args.producer_epoch is None:
        raise CommandError("Missing required argument --producer-epoch")
    if args.coordinator_epoch is None:
        raise CommandError("Missing required argument --coordinator-epoch")
    return AbortTransactionSpec(
        tp, args.producer_id, args.producer_epoch, max(0, args.coordinator_epoch)
    )


def check_args(args: argparse.Namespace) -> None:
    """Kafka's checks made before anything is asked of the cluster, and an empty topic name
    refused with Kafka's message for it (its brokers would answer INVALID_TOPIC_EXCEPTION)."""
    if getattr(args, "topic", None) == "":
        raise CommandError("Topic name is illegal, it can't be empty")
    if args.command == "abort" and args.start_offset is None and args.producer_id is None:
        raise CommandError(
            "The transaction to abort must be identified either with --start-offset (for "
            "brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
            "--coordinator-epoch (for older brokers)"
        )
    if args.command == "find-hanging":
        if args.topic is None and args.broker_id is None:
            raise CommandError(
                "The `find-hanging` command requires either --topic or --broker-id to limit "
                "the scope of the search"
            )
        if args.partition is not None and args.topic is None:
            raise CommandError("The --partition argument requires --topic to be provided")


def failure(message: str, exc: KafkaError) -> CommandError:
    """Kafka's printErrorAndExit: what was being done, then why it failed."""
    return CommandError(f"{message}: {exc}")


T = TypeVar("T")


def _batches(items: Sequence[T]) -> Iterator[list[T]]:
    for start in range(0, len(items), MAX_BATCH_SIZE):
        yield list(items[start : start + MAX_BATCH_SIZE])


# ---------------------------------------------------------------------------------------------
# The commands
# ---------------------------------------------------------------------------------------------


def _now_ms() -> int:
    return int(time.time() * 1000)


def run_list(admin: Admin, args: argparse.Namespace) -> str:
    try:
        by_broker = admin.list_transactions(duration_ms=args.duration_filter)
    except KafkaError as exc:
        raise failure("Failed to list transactions", exc) from None
    return format_table(LIST_HEADERS, list_rows(by_broker))


def run_describe(admin: Admin, args: argparse.Namespace) -> str:
    tid = args.transactional_id
    try:
        description = admin.describe_transactions([tid])[tid]
    except KafkaError as exc:
        raise failure(
            f"Failed to describe transaction state of transactional-id `{tid}`", exc
        ) from None
    return format_table(DESCRIBE_HEADERS, [describe_row(tid, description, _now_ms())])


def run_describe_producers(admin: Admin, args: argparse.Namespace) -> str:
    tp = TopicPartition(args.topic, args.partition)
    try:
        producers = admin.describe_producers([tp], broker_id=args.broker_id)[tp]
    except KafkaError as exc:
        where = "leader" if args.broker_id is None else f"broker {args.broker_id}"
        raise failure(
            f"Failed to describe producers for partition {partition_text(tp)} on {where}", exc
        ) from None
    return format_table(PRODUCER_HEADERS, producer_rows(producers))


def run_abort(admin: Admin, args: argparse.Namespace) -> str:
    tp = TopicPartition(args.topic, args.partition)
    if args.start_offset is None:
        spec = abort_spec_given(tp, args)
    else:
        try:
            producers = admin.describe_producers([tp])[tp]
        except KafkaError as exc:
            raise failure(
                f"Failed to validate producer state for partition {partition_text(tp)}", exc
            ) from None
        spec = abort_spec_at(tp, producers, args.start_offset)
    try:
        admin.abort_transaction(spec)
    except KafkaError as exc:
        raise failure(f"Failed to abort transaction {spec}", exc) from None
    return ""


def _partitions_to_search(admin: Admin, args: argparse.Namespace) -> list[TopicPartition]:
    if args.topic is not None and args.partition is not None:
        return [TopicPartition(args.topic, args.partition)]
    if args.topic is not None:
        topics = [args.topic]
    else:
        try:
            topics = list(admin.list_topics())
        except KafkaError as exc:
            raise failure("Failed to list topics", exc) from None
    found: list[TopicPartition] = []
    for batch in _batches(topics):
        try:
            descriptions = admin.describe_topics(batch)
        except KafkaError as exc:
            raise failure(f"Failed to describe {len(batch)} topics", exc) from None
        for name, description in descriptions.items():
            for info in description.partitions:
                if args.broker_id is None or args.broker_id in info.replicas:
                    found.append(TopicPartition(name, info.partition))
    return sorted(found)


def run_find_hanging(admin: Admin, args: argparse.Namespace) -> str:
    max_timeout_ms = args.max_transaction_timeout * 60_000
    candidates: list[OpenTransaction] = []
    for batch in _batches(_partitions_to_search(admin, args)):
        try:
            producers = admin.describe_producers(batch, broker_id=args.broker_id)
        except KafkaError as exc:
            raise failure(
                f"Failed to describe producers for {len(batch)} partitions on broker "
                f"{'leader' if args.broker_id is None else args.broker_id}",
                exc,
            ) from None
        candidates += candidate_open_transactions(producers, _now_ms(), max_timeout_ms)
    hanging: list[OpenTransaction] = []
    if candidates:
        producer_ids = {c.producer.producer_id for c in candidates}
        try:
            listed = admin.list_transactions(producer_ids=producer_ids)
        except KafkaError as exc:
            raise failure(
                f"Failed to list transactions for {len(producer_ids)} producers", exc
            ) from None
        tids = {
            t.producer_id: t.transactional_id
            for listings in listed.values()
            for t in listings
            if t.producer_id in producer_ids
        }
        descriptions = _describe_known(admin, set(tids.values()))
        hanging = hanging_transactions(candidates, tids, descriptions)
    return format_table(HANGING_HEADERS, hanging_rows(hanging, _now_ms()))


def _describe_known(admin: Admin, tids: set[str]) -> dict[str, TransactionDescription | None]:
    """Descriptions of ``tids``; None for one the coordinator no longer knows."""
    if not tids:
        return {}
    try:
        return dict(admin.describe_transactions(sorted(tids)))
    except AdminError as exc:
        failed = {
            k: e for k, e in exc.errors.items() if e.code != Errors.TRANSACTIONAL_ID_NOT_FOUND
        }
        if failed:
            raise failure(f"Failed to describe {len(tids)} transactions", exc) from None
        return {**exc.results, **dict.fromkeys(exc.errors)}
    except KafkaError as exc:
        raise failure(f"Failed to describe {len(tids)} transactions", exc) from None


COMMANDS = {
    "list": run_list,
    "describe": run_describe,
    "describe-producers": run_describe_producers,
    "abort": run_abort,
    "find-hanging": run_find_hanging,
}


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)

    def body() -> None:
        check_args(args)
        props = client_properties(args.bootstrap_server, args.command_config)
        with Admin(props) as admin:
            text = COMMANDS[args.command](admin, args)
        print(text, end="")

    return run(body)
