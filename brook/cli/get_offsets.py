"""``brook get-offsets``: offsets of topic partitions at a time, as kafka-get-offsets.sh.

    brook get-offsets --bootstrap-server 127.0.0.1:9092 --topic 'orders.*' --time earliest
    brook get-offsets --bootstrap-server 127.0.0.1:9092 --topic-partitions 't:0-2,u' --time -1

Prints ``topic:partition:offset`` lines, as Kafka's GetOffsetShell does.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from brook.client.admin import Admin
from brook.client.admin.types import AdminError, OffsetSpec
from brook.config.defs import ConfigError
from brook.protocol.errors import KafkaError

from .common import (
    CommandError,
    ToolParser,
    add_connection_args,
    client_properties,
    include_list,
    parse_args,
)

_PATTERN = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")
_NAMED_TIMES = {
    "latest": OffsetSpec.LATEST,
    "earliest": OffsetSpec.EARLIEST,
    "max-timestamp": OffsetSpec.MAX_TIMESTAMP,
    "earliest-local": OffsetSpec.EARLIEST_LOCAL,
    "latest-tiered": OffsetSpec.LATEST_TIERED,
}

Filter = Callable[[str, int], bool]


def build_parser() -> ToolParser:
    p = ToolParser(
        prog="brook get-offsets",
        description="An interactive shell for getting topic-partition offsets.",
    )
    add_connection_args(p, "property file containing configs to be passed to the admin client")
    p.add_argument(
        "--topic-partitions",
        metavar="topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3",
        help="comma separated topic-partition patterns: a topic regex, then an "
        "optional ':' and a partition, a range N-M (M exclusive), N- or -M",
    )
    p.add_argument("--topic", help="the topic (a regular expression); default: every topic")
    p.add_argument("--partitions", help="comma separated partition ids; default: all")
    p.add_argument(
        "--time",
        default="latest",
        help="<timestamp> / -1 or latest / -2 or earliest / -3 or max-timestamp / "
        "-4 or earliest-local / -5 or latest-tiered (default latest)",
    )
    p.add_argument(
        "--exclude-internal-topics", action="store_true", help="leave out internal topics"
    )
    return p


def parse_time(text: str) -> int:
    if text in _NAMED_TIMES:
        return int(_NAMED_TIMES[text])
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < int(OffsetSpec.LATEST_TIERED):
        raise CommandError(
            f"Malformed time argument {text}. Please use -1 or latest / -2 or earliest / -3 or "
            "max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specified long "
            "format timestamp"
        )
    return value


def _partition_rule(single: str | None, low: str | None, high: str | None) -> Callable[[int], bool]:
    if single:
        wanted = int(single)
        return lambda p: p == wanted
    lo = int(low) if low else 0
    hi = int(high) if high else None
    return lambda p: p >= lo and (hi is None or p < hi)


def pattern_list_filter(spec: str) -> Filter:
    """--topic-partitions: any rule matches."""
    rules: list[Filter] = []
    for rule in spec.split(","):
        m = _PATTERN.fullmatch(rule)
        if m is None:
            raise CommandError(f"Invalid rule specification: {rule}")
        topic_ok = include_list(m.group(1) or ".*")
        part_ok = _partition_rule(m.group(2), m.group(3), m.group(4))
        rules.append(lambda t, p, topic_ok=topic_ok, part_ok=part_ok: topic_ok(t) and part_ok(p))
    return lambda t, p: any(rule(t, p) for rule in rules)


def topic_and_partitions_filter(topic: str | None, partitions: str | None) -> Filter:
    topic_ok = include_list(topic or ".*")
    if not partitions:
        return lambda t, _p: topic_ok(t)
    try:
        wanted = {int(x.strip()) for x in partitions.split(",")}
    except ValueError:
        raise CommandError(
            "--partitions expects a comma separated list of numeric partition "
            f"ids, but received: {partitions}"
        ) from None
    return lambda t, p: topic_ok(t) and p in wanted


def fetch_offsets(
    admin: Admin, keep: Filter, spec: int, exclude_internal: bool
) -> dict[tuple[str, int], int]:
    topics = list(admin.list_topics(include_internal=not exclude_internal))
    described = admin.describe_topics(topics) if topics else {}
    partitions = [
        (name, p.partition)
        for name, desc in described.items()
        for p in desc.partitions
        if keep(name, p.partition)
    ]
    if not partitions:
        raise CommandError("Could not match any topic-partitions with the specified filters")
    try:
        listed = admin.list_offsets(dict.fromkeys(partitions, spec))
        failed: dict = {}
    except AdminError as exc:
        listed, failed = exc.results, exc.errors
    for tp, err in sorted(failed.items(), key=lambda kv: _tp_text(kv[0])):
        print(
            f"Skip getting offsets for topic-partition {_tp_text(tp)} due to error: {err}",
            file=sys.stderr,
        )
    return {(tp[0], tp[1]): r.offset for tp, r in listed.items() if r.offset != -1}


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)
    try:
        if not args.bootstrap_server:
            parser.fail('Missing required argument "[bootstrap-server]"')
        if args.topic_partitions and (args.topic or args.partitions):
            raise CommandError("--topic-partitions cannot be used with --topic or --partitions")
        spec = parse_time(args.time)
        if args.topic_partitions:
            keep = pattern_list_filter(args.topic_partitions)
        else:
            keep = topic_and_partitions_filter(args.topic, args.partitions)
        props = client_properties(
            args.bootstrap_server, args.command_config, overrides={"client.id": "GetOffsetShell"}
        )
        with Admin(props) as admin:
            offsets = fetch_offsets(admin, keep, spec, args.exclude_internal_topics)
    except (CommandError, ConfigError, KafkaError) as exc:
        print(f"Error occurred: {exc}", file=sys.stderr)
        return 1
    # Kafka sorts by TopicPartition.toString(), "topic-partition", as text.
    for (topic, partition), offset in sorted(offsets.items(), key=lambda kv: _tp_text(kv[0])):
        print(f"{topic}:{partition}:{offset}")
    return 0


def _tp_text(tp: tuple[str, int]) -> str:
    return f"{tp[0]}-{tp[1]}"
