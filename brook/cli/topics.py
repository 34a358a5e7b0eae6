"""``brook topics``: create, delete, describe, list or grow topics, as kafka-topics.sh.

    brook topics --bootstrap-server 127.0.0.1:9092 --create --topic t --partitions 3
    brook topics --bootstrap-server 127.0.0.1:9092 --describe --topic 't.*'

The flags, checks and output lines are Kafka's (TopicCommand); --topic takes a regular
expression everywhere but --create.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from brook.client.admin import Admin
from brook.client.admin.types import (
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    TopicDescription,
)
from brook.protocol.errors import Errors, KafkaError

from .common import (
    CommandError,
    ToolParser,
    add_connection_args,
    client_properties,
    include_list,
    kafka_uuid,
    parse_args,
    run,
)

ACTIONS = ("create", "list", "alter", "describe", "delete")
REPORTS = (
    "under_replicated_partitions",
    "unavailable_partitions",
    "under_min_isr_partitions",
    "at_min_isr_partitions",
)


def build_parser() -> ToolParser:
    p = ToolParser(prog="brook topics", description="Create, delete, describe, or change a topic.")
    add_connection_args(p, "property file containing configs to be passed to the admin client")
    p.add_argument("--list", action="store_true", help="list all available topics")
    p.add_argument("--create", action="store_true", help="create a new topic")
    p.add_argument("--delete", action="store_true", help="delete a topic")
    p.add_argument("--alter", action="store_true", help="alter the number of partitions")
    p.add_argument("--describe", action="store_true", help="list details for the given topics")
    p.add_argument("--topic", help="the topic (a regular expression, except with --create)")
    p.add_argument("--topic-id", help="the topic id to describe")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a topic configuration override for the topic being created",
    )
    p.add_argument("--partitions", type=int, help="number of partitions (create or alter)")
    p.add_argument("--replication-factor", type=int, help="replication factor (create)")
    p.add_argument(
        "--replica-assignment",
        metavar="B1:B2,B3:B4,...",
        help="manual partition-to-broker assignments (create or alter)",
    )
    p.add_argument(
        "--under-replicated-partitions",
        action="store_true",
        help="when describing, only show under-replicated partitions",
    )
    p.add_argument(
        "--unavailable-partitions",
        action="store_true",
        help="when describing, only show partitions whose leader is not available",
    )
    p.add_argument(
        "--under-min-isr-partitions",
        action="store_true",
        help="when describing, only show partitions with fewer ISR than the minimum",
    )
    p.add_argument(
        "--at-min-isr-partitions",
        action="store_true",
        help="when describing, only show partitions whose ISR equals the minimum",
    )
    p.add_argument(
        "--topics-with-overrides",
        action="store_true",
        help="when describing, only show topics that have overridden configs",
    )
    p.add_argument(
        "--if-exists",
        action="store_true",
        help="alter, delete or describe only if the topic exists",
    )
    p.add_argument(
        "--if-not-exists",
        action="store_true",
        help="do not fail create if the topic already exists",
    )
    p.add_argument(
        "--exclude-internal",
        action="store_true",
        help="exclude internal topics when listing or describing",
    )
    p.add_argument(
        "--partition-size-limit-per-response",
        type=int,
        help="accepted for compatibility; partitions are described in one request",
    )
    return p


def check_args(p: ToolParser, a: argparse.Namespace) -> None:
    """TopicCommandOptions.checkArgs: one action, required and forbidden combinations."""
    chosen = [name for name in ACTIONS if getattr(a, name)]
    if len(chosen) != 1:
        p.fail(
            "Command must include exactly one action: --list, --describe, --create, "
            "--alter or --delete"
        )
    action = chosen[0]
    if not a.bootstrap_server:
        raise CommandError("--bootstrap-server must be specified")
    if action not in ("list", "describe") and not a.topic:
        p.fail('Missing required argument "[topic]"')
    if action == "alter" and a.partitions is None:
        p.fail('Missing required argument "[partitions]"')
    only = {
        "config": ("alter", "create"),
        "partitions": ("alter", "create"),
        "replication_factor": ("create",),
        "replica_assignment": ("alter", "create"),
        "if_exists": ("alter", "delete", "describe"),
        "if_not_exists": ("create",),
        "exclude_internal": ("list", "describe"),
        "topics_with_overrides": ("describe",),
        **dict.fromkeys(REPORTS, ("describe",)),
    }
    for opt, allowed in only.items():
        if getattr(a, opt) and action not in allowed:
            p.fail(f'Option "[{opt.replace("_", "-")}]" can\'t be used with option "[{action}]"')
    if action == "alter" and a.config:
        p.fail(
            'Option "[config]" can\'t be used with option "[alter]" '
            "(To alter topic configurations, the brook configs tool can be used.)"
        )
    if (
        action == "create"
        and a.replica_assignment
        and (a.partitions is not None or a.replication_factor is not None)
    ):
        p.fail(
            'Option "[replica-assignment]" can\'t be used with option "[partitions]" '
            'or "[replication-factor]"'
        )
    if a.topics_with_overrides and any(getattr(a, r) for r in REPORTS):
        p.fail('Option "[topics-with-overrides]" can\'t be used with the partition reports')


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for index, part in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in part.split(":")]
        except ValueError:
            raise CommandError(
                f"Invalid replica assignment '{text}': broker ids must be integers"
            ) from None
        dupes = sorted({b for b in brokers if brokers.count(b) > 1})
        if dupes:
            raise CommandError(
                "Partition replica lists may not contain duplicate entries: "
                + ",".join(map(str, dupes))
            )
        if out and len(brokers) != len(out[0]):
            raise CommandError(f"Partition {index} has different replication factor: {brokers}")
        out[index] = brokers
    return out


def parse_topic_configs(items: Sequence[str]) -> dict[str, str]:
    configs: dict[str, str] = {}
    for item in items:
        parts = [s.strip() for s in item.split("=")]
        if len(parts) != 2:
            raise CommandError(
                "requirement failed: Invalid topic config: all configs to be "
                'added must be in the format "key=val".'
            )
        configs[parts[0]] = parts[1]
    return configs


class TopicService:
    def __init__(self, admin: Admin, args: argparse.Namespace) -> None:
        self.admin = admin
        self.args = args

    def matching_topics(self) -> list[str]:
        a = self.args
        listed = self.admin.list_topics(include_internal=not a.exclude_internal)
        allowed = include_list(a.topic)
        return [name for name in sorted(listed) if allowed(name)]

    def ensure_found(self, topics: list[str]) -> None:
        a = self.args
        if a.topic and not topics and not a.if_exists:
            raise CommandError(f"Topic '{a.topic}' does not exist as expected")

    def create(self) -> None:
        a = self.args
        if a.replication_factor is not None and not 1 <= a.replication_factor <= 32767:
            raise CommandError("The replication factor must be between 1 and 32767 inclusive")
        if a.partitions is not None and a.partitions < 1:
            raise CommandError("The partitions must be greater than 0")
        if "." in a.topic or "_" in a.topic:
            print(
                "WARNING: Due to limitations in metric names, topics with a period ('.') or "
                "underscore ('_') could collide. To avoid issues it is best to use either, "
                "but not both."
            )
        topic = NewTopic(
            a.topic,
            -1 if a.partitions is None else a.partitions,
            -1 if a.replication_factor is None else a.replication_factor,
            parse_replica_assignment(a.replica_assignment) if a.replica_assignment else None,
            parse_topic_configs(a.config),
        )
        try:
            self.admin.create_topics([topic])
        except KafkaError as exc:
            if exc.code == Errors.TOPIC_ALREADY_EXISTS and a.if_not_exists:
                return
            raise
        print(f"Created topic {a.topic}.")

    def list(self) -> None:
        topics = self.matching_topics()
        if topics:
            print("\n".join(topics))

    def alter(self) -> None:
        topics = self.matching_topics()
        self.ensure_found(topics)
        if not topics:
            return
        assignments = None
        if self.args.replica_assignment:
            full = parse_replica_assignment(self.args.replica_assignment)
            existing = self.admin.describe_topics(topics)
            assignments = {
                t: [full[p] for p in sorted(full) if p >= len(existing[t].partitions)]
                for t in topics
            }
        self.admin.create_partitions(
            {
                t: NewPartitions(self.args.partitions, assignments[t] if assignments else None)
                for t in topics
            }
        )

    def delete(self) -> None:
        topics = self.matching_topics()
        self.ensure_found(topics)
        if topics:
            self.admin.delete_topics(topics)

    def describe(self) -> None:
        a = self.args
        if a.topic_id:
            listings = self.admin.list_topics(include_internal=not a.exclude_internal)
            topics = [n for n, t in listings.items() if kafka_uuid(t.topic_id) == a.topic_id]
            if not topics and not a.if_exists:
                raise CommandError(f"TopicId '{a.topic_id}' does not exist as expected")
        else:
            topics = self.matching_topics()
            self.ensure_found(topics)
        if not topics:
            return
        descriptions = self.admin.describe_topics(topics)
        configs = self.admin.describe_configs([ConfigResource.topic(t) for t in topics])
        live = {b.node_id for b in self.admin.describe_cluster().brokers}
        reports = [r for r in REPORTS if getattr(a, r)]
        for name in topics:
            desc = descriptions[name]
            config = configs[ConfigResource.topic(name)]
            if not reports:
                overridden = [e for e in config.values() if e.source != ConfigSource.DEFAULT_CONFIG]
                if not a.topics_with_overrides or overridden:
                    print(topic_line(desc, overridden))
            if a.topics_with_overrides:
                continue
            min_isr = _min_isr(config)
            for part in sorted(desc.partitions, key=lambda p: p.partition):
                if not reports or any(_report(r, part, live, min_isr) for r in reports):
                    print(partition_line(part))


def topic_line(desc: TopicDescription, overridden: list[ConfigEntry]) -> str:
    parts = sorted(desc.partitions, key=lambda p: p.partition)
    configs = ",".join(f"{e.name}={e.value}" for e in overridden)
    head = f"Topic: {desc.name}"
    if desc.topic_id is not None and desc.topic_id.int != 0:
        head += f"\tTopicId: {kafka_uuid(desc.topic_id)}"
    rf = len(parts[0].replicas) if parts else 0
    return f"{head}\tPartitionCount: {len(parts)}\tReplicationFactor: {rf}\tConfigs: {configs}"


def partition_line(part: Any) -> str:
    leader = part.leader if part.leader >= 0 else "none"
    replicas = ",".join(map(str, part.replicas))
    isr = ",".join(map(str, part.isr))
    # Elr / LastKnownElr come from DescribeTopicPartitions; through Metadata they are unknown.
    return (
        f"\tTopic: {part.topic}\tPartition: {part.partition}\tLeader: {leader}"
        f"\tReplicas: {replicas}\tIsr: {isr}\tElr: N/A\tLastKnownElr: N/A"
    )


def _min_isr(config: dict[str, ConfigEntry]) -> int:
    entry = config.get("min.insync.replicas")
    try:
        return int(entry.value) if entry is not None and entry.value is not None else 1
    except ValueError:
        return 1


def _report(report: str, part: Any, live: set[int], min_isr: int) -> bool:
    has_leader = part.leader >= 0
    if report == "under_replicated_partitions":
        return len(part.replicas) - len(part.isr) > 0
    if report == "unavailable_partitions":
        return not has_leader or part.leader not in live
    if report == "under_min_isr_partitions":
        return not has_leader or len(part.isr) < min_isr
    return len(part.isr) == min_isr


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)

    def body() -> None:
        check_args(parser, args)
        props = client_properties(args.bootstrap_server, args.command_config)
        with Admin(props) as admin:
            action = next(name for name in ACTIONS if getattr(args, name))
            getattr(TopicService(admin, args), action)()

    return run(body, "Error while executing topic command : ")
