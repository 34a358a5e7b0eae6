"""``brook consumer-groups``: list, describe, delete consumer groups and reset or delete their
offsets, as kafka-consumer-groups.sh (ConsumerGroupCommand) with its flags, checks, columns
and messages.

    brook consumer-groups --bootstrap-server 127.0.0.1:9092 --list --state
    brook consumer-groups --bootstrap-server 127.0.0.1:9092 --describe --group g
    brook consumer-groups --bootstrap-server 127.0.0.1:9092 --reset-offsets --group g \\
        --topic t --to-earliest --execute

Unlike Kafka's script, a failed command exits with code 1.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from brook.client.admin import Admin
from brook.client.admin.groups import ConsumerGroupDescription, GroupListing
from brook.client.admin.types import AdminError, OffsetSpec
from brook.client.cluster import TopicPartition
from brook.client.consumer.coordinator import OffsetAndMetadata
from brook.config.defs import ConfigError
from brook.protocol.errors import Errors, KafkaError

from .common import CommandError, ToolParser, add_connection_args, client_properties, parse_args

MISSING = "-"
_GROUP_STATES = (
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Empty",
    "Assigning",
    "Reconciling",
)
_GROUP_TYPES = ("Classic", "Consumer")
_SCENARIOS = (
    "to-offset",
    "shift-by",
    "to-datetime",
    "by-duration",
    "to-earliest",
    "to-latest",
    "to-current",
    "from-file",
)
_NO_EXECUTE_WARNING = (
    "WARN: No action will be performed as the --execute option is missing.In a future major "
    "release, the default behavior of this command will be to prompt the user before executing "
    "the reset rather than doing a dry run. You should add the --dry-run option explicitly if "
    "you are scripting this command and want to keep the current default behavior without "
    "prompting."
)
# How Kafka's tool shows the errors a group command meets (exception class and message).
_JAVA_ERRORS = {
    Errors.NON_EMPTY_GROUP: ("GroupNotEmptyException", "The group is not empty."),
    Errors.GROUP_ID_NOT_FOUND: ("GroupIdNotFoundException", "The group id does not exist."),
    Errors.GROUP_SUBSCRIBED_TO_TOPIC: (
        "GroupSubscribedToTopicException",
        "The consumer group is actively subscribed to the topic",
    ),
    Errors.UNKNOWN_TOPIC_OR_PARTITION: (
        "UnknownTopicOrPartitionException",
        "This server does not host this topic-partition.",
    ),
    Errors.INVALID_GROUP_ID: ("InvalidGroupIdException", "The configured groupId is invalid."),
    Errors.UNKNOWN_MEMBER_ID: (
        "UnknownMemberIdException",
        "The coordinator is not aware of this member.",
    ),
    Errors.COORDINATOR_NOT_AVAILABLE: (
        "CoordinatorNotAvailableException",
        "The coordinator is not available.",
    ),
}


def java_error(exc: KafkaError) -> str:
    """``org.apache.kafka.common.errors.X: message`` as Kafka's tool prints an exception."""
    known = _JAVA_ERRORS.get(exc.code)
    if known is None:
        return str(exc)
    return f"org.apache.kafka.common.errors.{known[0]}: {known[1]}"


def error_message(exc: KafkaError) -> str:
    known = _JAVA_ERRORS.get(exc.code)
    return known[1] if known else str(exc)


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------


def build_parser() -> ToolParser:
    p = ToolParser(
        prog="brook consumer-groups",
        description="This tool helps to list all consumer groups, describe a consumer group, "
        "delete consumer group info, or reset consumer group offsets.",
    )
    add_connection_args(p, "property file containing configs to be passed to Admin Client")
    a = p.add_argument
    a("--list", action="store_true", help="list all consumer groups")
    a("--describe", action="store_true", help="describe consumer group and list offset lag")
    a("--delete", action="store_true", help="delete the groups (offsets and ownership)")
    a("--reset-offsets", action="store_true", help="reset offsets of consumer group")
    a("--delete-offsets", action="store_true", help="delete offsets of a consumer group")
    a("--validate-regex", metavar="REGEX", help="validate a regular expression")
    a("--group", action="append", default=[], help="the consumer group we wish to act on")
    a("--all-groups", action="store_true", help="apply to all consumer groups")
    a(
        "--topic",
        action="append",
        default=[],
        help="topic (reset-offsets: 'topic' or 'topic:0,1,2'; delete-offsets: topics)",
    )
    a("--all-topics", action="store_true", help="all topics of the group (reset-offsets)")
    a("--timeout", type=int, default=5000, help="timeout (ms) of admin calls (default 5000)")
    a("--members", action="store_true", help="describe members of the group")
    a("--offsets", action="store_true", help="describe partitions with their lag (the default)")
    a("--verbose", action="store_true", help="provide additional information")
    a(
        "--state",
        nargs="?",
        const="",
        default=None,
        help="with --describe: the group's state; with --list: show (or filter by) states",
    )
    a(
        "--type",
        nargs="?",
        const="",
        default=None,
        help="with --list: show (or filter by) group types (classic, consumer)",
    )
    a("--dry-run", action="store_true", help="only show results (the default)")
    a("--execute", action="store_true", help="execute the offset reset")
    a("--export", action="store_true", help="export the reset plan as CSV")
    a("--to-offset", type=int, help="reset offsets to a specific offset")
    a("--to-earliest", action="store_true", help="reset offsets to the earliest offset")
    a("--to-latest", action="store_true", help="reset offsets to the latest offset")
    a("--to-current", action="store_true", help="reset offsets to the current offset")
    a("--shift-by", type=int, metavar="N", help="shift the current offset by N (may be < 0)")
    a("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="reset offsets to a datetime")
    a("--by-duration", metavar="PnDTnHnMnS", help="reset offsets to now minus a duration")
    a("--from-file", metavar="CSV", help="reset offsets to the values of a CSV file")
    return p


def _opt(name: str) -> str:
    return f"[{name}]"


def check_args(p: ToolParser, args: argparse.Namespace) -> None:
    """ConsumerGroupCommandOptions.checkArgs, message for message."""
    actions = ["list", "describe", "delete", "reset-offsets", "delete-offsets", "validate-regex"]
    given = [a for a in actions if getattr(args, a.replace("-", "_")) not in (False, None)]
    if len(given) != 1:
        p.fail("Command must include exactly one action: " + ", ".join(f"--{a}" for a in actions))
    if args.validate_regex is not None:
        return
    if not args.bootstrap_server:
        p.fail('Missing required argument "[bootstrap-server]"')
    scope = f"{_opt('group')}, {_opt('all-groups')}"
    if args.describe:
        if not args.group and not args.all_groups:
            p.fail(f"Option {_opt('describe')} takes one of these options: {scope}")
        if sum(x for x in (args.members, args.offsets, args.state is not None)) > 1:
            p.fail(
                f"Option {_opt('describe')} takes at most one of these options: "
                f"{_opt('members')}, {_opt('offsets')}, {_opt('state')}"
            )
        if args.state:
            p.fail(f"Option {_opt('describe')} does not take a value for {_opt('state')}")
    if args.delete:
        if not args.group and not args.all_groups:
            p.fail(f"Option {_opt('delete')} takes one of these options: {scope}")
        if args.topic:
            p.fail(
                "The consumer does not support topic-specific offset deletion from a consumer "
                "group."
            )
    if args.delete_offsets and (not args.group or not args.topic):
        p.fail(
            f"Option {_opt('delete-offsets')} takes the following options: "
            f"{_opt('group')}, {_opt('topic')}"
        )
    if args.reset_offsets:
        if args.dry_run and args.execute:
            p.fail(
                f"Option {_opt('reset-offsets')} only accepts one of {_opt('execute')} and "
                f"{_opt('dry-run')}"
            )
        if not args.dry_run and not args.execute:
            print(_NO_EXECUTE_WARNING, file=sys.stderr)
        if not args.group and not args.all_groups:
            p.fail(f"Option {_opt('reset-offsets')} takes one of these options: {scope}")
        chosen = [s for s in _SCENARIOS if getattr(args, s.replace("-", "_")) not in (None, False)]
        if len(chosen) > 1:
            p.fail(f'Option "{_opt(chosen[0])}" can\'t be used with option "{_opt(chosen[1])}"')
    if args.group and args.all_groups:
        p.fail(f'Option "{_opt("group")}" can\'t be used with option "{_opt("all-groups")}"')
    if args.group and args.list:
        p.fail(f'Option "{_opt("group")}" can\'t be used with option "{_opt("list")}"')
    if args.topic:
        for action in ("list", "describe"):
            if getattr(args, action):
                p.fail(f'Option "{_opt("topic")}" can\'t be used with option "{_opt(action)}"')
    for flag in ("members", "offsets", "verbose"):
        if getattr(args, flag) and not args.describe:
            p.fail(f"Option {_opt(flag)} can only be used with {_opt('describe')}")
    if args.type is not None and not args.list:
        p.fail(f"Option {_opt('type')} can only be used with {_opt('list')}")
    if args.state is not None and not (args.list or args.describe):
        p.fail(f"Option {_opt('state')} can only be used with {_opt('describe')}, {_opt('list')}")


def parse_states(text: str) -> list[str]:
    by_lower = {s.lower(): s for s in _GROUP_STATES}
    parsed = [by_lower.get(s.strip().lower()) for s in text.split(",")]
    if any(s is None for s in parsed):
        raise ValueError(
            f"Invalid state list '{text}'. Valid states are: " + ", ".join(_GROUP_STATES)
        )
    return [s for s in parsed if s is not None]


def parse_types(text: str) -> list[str]:
    parsed = [s.strip().lower() for s in text.lower().split(",")]
    if any(t not in ("classic", "consumer") for t in parsed):
        raise ValueError(
            f"Invalid types list '{text}'. Valid types are: " + ", ".join(_GROUP_TYPES)
        )
    return parsed


# ---------------------------------------------------------------------------------------------
# Output (pure: rows in, text out)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OffsetRow:
    """One line of ``--describe --offsets``."""

    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    log_end_offset: int | None
    consumer_id: str
    host: str
    client_id: str
    leader_epoch: int | None = None

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset == -1 or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.offset


def _s(value: object) -> str:
    return MISSING if value is None else str(value)


def _cols(widths: Sequence[int], cells: Sequence[object]) -> str:
    """Java's ``%-Ns`` columns joined by one space (width 0: no padding)."""
    return " ".join(f"{c!s:<{w}}" if w else str(c) for w, c in zip(widths, cells, strict=True))


def format_group_list(
    listings: Sequence[GroupListing], include_type: bool, include_state: bool
) -> str:
    if not include_type and not include_state:
        return "".join(f"{g.group_id}\n" for g in listings)
    width = max((max(15, len(g.group_id)) for g in listings), default=15) + 10
    columns = [("GROUP", width, lambda g: g.group_id)]
    if include_type:
        columns.append(("TYPE", 20, lambda g: (g.type or "unknown").capitalize()))
    if include_state:
        columns.append(("STATE", 20, lambda g: g.state or "Unknown"))
    lines = [" ".join(f"{h:<{w}}" for h, w, _ in columns)]
    lines += [" ".join(f"{fn(g):<{w}}" for _, w, fn in columns) for g in listings]
    return "\n".join(lines) + "\n"


def state_message(group: str, state: str | None, rows: int | None) -> tuple[str, str, bool]:
    """(stdout text, stderr text, print the table?) as Kafka's shouldPrintMemberState."""
    if rows is None:
        return f"\nError: The consumer group '{group}' does not exist.\n", "", False
    if state == "Dead":
        return f"\nError: Consumer group '{group}' does not exist.\n", "", False
    err = ""
    if state == "Empty":
        err = f"\nConsumer group '{group}' has no active members.\n"
    elif state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        err = f"\nWarning: Consumer group '{group}' is rebalancing.\n"
    return "", err, rows > 0


def format_offsets(rows: Sequence[OffsetRow], verbose: bool) -> str:
    g = max([15, *(len(r.group) for r in rows)])
    t = max([15, *(len(_s(r.topic)) for r in rows)])
    c = max([15, *(len(r.consumer_id) for r in rows)])
    h = max([15, *(len(r.host) for r in rows)])
    widths = [g, t, 10, *([15] if verbose else []), 15, 15, 15, c, h, 0]
    head = ["GROUP", "TOPIC", "PARTITION", *(["LEADER-EPOCH"] if verbose else [])]
    head += ["CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    out = ["\n" + _cols(widths, head)]
    for r in rows:
        cells = [r.group, _s(r.topic), _s(r.partition)]
        cells += [_s(r.leader_epoch)] if verbose else []
        cells += [_s(r.offset), _s(r.log_end_offset), _s(r.lag), r.consumer_id, r.host]
        out.append("\n" + _cols(widths, [*cells, r.client_id]))
    return "".join(out) + "\n"


def assignment_text(partitions: Iterable[TopicPartition]) -> str:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return MISSING
    return ";".join(
        sorted(f"{t}:" + ",".join(str(p) for p in sorted(ps)) for t, ps in by_topic.items())
    )


def format_members(desc: ConsumerGroupDescription, verbose: bool) -> str:
    members = desc.members
    g = max([15, *(len(desc.group_id) for _ in members)])
    c = max([15, *(len(m.member_id) for m in members)])
    i = max([17, *(len(m.group_instance_id or "") for m in members)])
    h = max([15, *(len(m.host) for m in members)])
    k = max([15, *(len(m.client_id) for m in members)])
    cur = max([20, *(len(assignment_text(m.assignment)) for m in members)])
    with_instance = any(m.group_instance_id for m in members)

    def base(cells: Sequence[str]) -> str:
        if with_instance:
            return (
                f"{cells[0]:<{g}} {cells[1]:<{c}} {cells[2]:<{i}} {cells[3]:<{h}} "
                f"{cells[4]:<{k}} {cells[5]:<15} "
            )
        return f"{cells[0]:<{g}} {cells[1]:<{c}} {cells[3]:<{h}} {cells[4]:<{k}} {cells[5]:<15} "

    def extra(cells: Sequence[str]) -> str:
        return f"{cells[0]:<15} {cells[1]:<{cur}} {cells[2]:<15} {cells[3]:<20}" if verbose else ""

    head = ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    out = "\n" + base(head)
    out += extra(["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"])
    out += "\n"
    for m in members:
        cells = [
            desc.group_id,
            m.member_id,
            m.group_instance_id or "",
            m.host,
            m.client_id,
            str(len(m.assignment)),
        ]
        out += base(cells) + extra([MISSING, assignment_text(m.assignment), MISSING, MISSING])
        out += "\n"
    return out


def format_state(desc: ConsumerGroupDescription, verbose: bool) -> str:
    node = desc.coordinator
    coordinator = f"{node.host}:{node.port}  ({node.node_id})"
    strategy = desc.partition_assignor or MISSING
    head = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE"]
    values: list[object] = [desc.group_id, coordinator, strategy, desc.state]
    widths = [max(15, len(desc.group_id)), max(25, len(coordinator)), 20, 20]
    if verbose:
        head += ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        values += [MISSING, MISSING]
        widths += [15, 25]
    widths.append(0)
    values.append(len(desc.members))
    return f"\n{_cols(widths, [*head, '#MEMBERS'])}\n{_cols(widths, values)}\n"


def format_reset_plan(plan: Mapping[str, Mapping[TopicPartition, int]]) -> str:
    g = max([15, *(len(group) for group in plan)])
    t = max([15, *(len(tp.topic) for offsets in plan.values() for tp in offsets)])
    widths = [g, t, 10, 0]
    out = "\n" + _cols(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]) if plan else ""
    for group, offsets in plan.items():
        for tp, offset in sorted(offsets.items()):
            out += "\n" + _cols(widths, [group, tp.topic, tp.partition, offset])
    return out + "\n"


def export_csv(plan: Mapping[str, Mapping[TopicPartition, int]], single_group: bool) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for group, offsets in plan.items():
        for tp, offset in sorted(offsets.items()):
            row = [tp.topic, tp.partition, offset]
            writer.writerow(row if single_group else [group, *row])
    return buf.getvalue()


def format_delete_offsets(results: Mapping[TopicPartition, KafkaError | None]) -> str:
    widths = [max([15, *(len(tp.topic) for tp in results)]), 10, 15]
    out = "\n" + _cols(widths, ["TOPIC", "PARTITION", "STATUS"])
    for tp, error in sorted(results.items(), key=lambda kv: f"{kv[0].topic}{kv[0].partition}"):
        status = "Successful" if error is None else f"Error: {java_error(error)}"
        partition = tp.partition if tp.partition >= 0 else MISSING
        out += "\n" + _cols(widths, [tp.topic, partition, status])
    return out + "\n"


# ---------------------------------------------------------------------------------------------
# Parsing reset inputs
# ---------------------------------------------------------------------------------------------

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+(?:[.,]\d+)?)S)?)?",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int:
    """Java's Duration.parse (PnDTnHnMn.nS) in milliseconds."""
    m = _DURATION.fullmatch(text.strip())
    if m is None or text.strip().upper().endswith("T") or not any(m.groups()[1:]):
        raise ValueError(f"Text cannot be parsed to a Duration: {text}")
    sign, days, hours, minutes, seconds = m.groups()
    total = (
        int(days or 0) * 86400
        + int(hours or 0) * 3600
        + int(minutes or 0) * 60
        + float((seconds or "0").replace(",", "."))
    )
    return round(total * 1000) * (-1 if sign == "-" else 1)


def parse_datetime_ms(text: str) -> int:
    """Kafka's Utils.getDateTime: 'yyyy-MM-ddTHH:mm:ss.SSS' with an optional zone (Z, +hh:mm,
    +hhmm); without one, the local time zone."""
    value = text.strip()
    match = re.fullmatch(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?)(.*)", value)
    if match is None:
        raise ValueError(
            f"Error parsing timestamp '{text}'; the format is yyyy-MM-dd'T'HH:mm:ss.SSS, with an "
            "optional time zone"
        )
    base, zone = match.groups()
    if zone in ("", None):
        parsed = datetime.datetime.fromisoformat(base).astimezone()
    else:
        if zone.upper() == "Z":
            zone = "+00:00"
        elif re.fullmatch(r"[+-]\d{4}", zone):
            zone = zone[:3] + ":" + zone[3:]
        try:
            parsed = datetime.datetime.fromisoformat(base + zone)
        except ValueError:
            raise ValueError(f"Error parsing timestamp '{text}': bad time zone {zone}") from None
    return int(parsed.timestamp() * 1000)


def parse_topic_partitions(arg: str) -> list[TopicPartition]:
    parts = arg.split(":")
    if len(parts) != 2 or not parts[1]:
        raise ValueError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    out = []
    for p in parts[1].split(","):
        try:
            out.append(TopicPartition(parts[0], int(p)))
        except ValueError:
            raise ValueError(f"Invalid partition '{p}' specified in topic arg '{arg}''") from None
    return out


def parse_reset_file(text: str, groups: Sequence[str]) -> dict[str, dict[TopicPartition, int]]:
    """``topic,partition,offset`` lines for one group, else ``group,topic,partition,offset``."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    plan: dict[str, dict[TopicPartition, int]] = {}
    old_format = bool(rows) and len(rows[0]) == 3
    try:
        for row in rows:
            if len(groups) == 1 and old_format:
                group, (topic, partition, offset) = groups[0], row
            else:
                group, topic, partition, offset = row
            plan.setdefault(group, {})[TopicPartition(topic, int(partition))] = int(offset)
    except ValueError as exc:
        raise CommandError(f"Cannot parse the reset plan file: {exc}") from None
    return plan


# ---------------------------------------------------------------------------------------------
# The service
# ---------------------------------------------------------------------------------------------


class ConsumerGroupService:
    def __init__(self, admin: Admin, args: argparse.Namespace, parser: ToolParser) -> None:
        self.admin = admin
        self.args = args
        self.parser = parser
        self.timeout = args.timeout

    # -- list ------------------------------------------------------------------------------

    def list_groups(self) -> None:
        args = self.args
        include_type, include_state = args.type is not None, args.state is not None
        states = parse_states(args.state) if args.state else []
        types = parse_types(args.type) if args.type else []
        listings = self.admin.list_consumer_groups(
            states=states, types=types, timeout_ms=self.timeout
        )
        sys.stdout.write(format_group_list(listings, include_type, include_state))

    def group_ids(self) -> list[str]:
        if self.args.all_groups:
            return [g.group_id for g in self.admin.list_consumer_groups(timeout_ms=self.timeout)]
        return list(dict.fromkeys(self.args.group))

    # -- describe --------------------------------------------------------------------------

    def describe_groups(self) -> None:
        args = self.args
        described = self.admin.describe_consumer_groups(self.group_ids(), timeout_ms=self.timeout)
        for group_id in sorted(described):
            desc = described[group_id]
            if args.members:
                out, err, show = state_message(group_id, desc.state, len(desc.members))
                body = format_members(desc, args.verbose) if show else ""
            elif args.state is not None:
                out, err, show = state_message(group_id, desc.state, 1)
                body = format_state(desc, args.verbose) if show else ""
            else:
                rows = self.offset_rows(desc)
                out, err, show = state_message(group_id, desc.state, len(rows))
                body = format_offsets(rows, args.verbose) if show else ""
            sys.stderr.write(err)
            sys.stdout.write(out + body)

    def offset_rows(self, desc: ConsumerGroupDescription) -> list[OffsetRow]:
        committed = {
            tp: v
            for tp, v in self.admin.list_consumer_group_offsets(
                desc.group_id, timeout_ms=self.timeout
            ).items()
            if v is not None
        }
        owners: list[tuple[list[TopicPartition], str, str, str]] = []
        for m in sorted(desc.members, key=lambda m: -len(m.assignment)):
            if m.assignment:
                owners.append((sorted(m.assignment), m.member_id, m.host, m.client_id))
        assigned = {tp for tps, *_ in owners for tp in tps}
        rest = sorted(tp for tp in committed if tp not in assigned)
        if rest:
            owners.append((rest, MISSING, MISSING, MISSING))
        ends = self.log_end_offsets({tp for tps, *_ in owners for tp in tps})
        rows = []
        for tps, consumer, host, client in owners:
            for tp in tps:
                c = committed.get(tp)
                rows.append(
                    OffsetRow(
                        desc.group_id,
                        tp.topic,
                        tp.partition,
                        c.offset if c else None,
                        ends.get(tp),
                        consumer,
                        host,
                        client,
                        c.leader_epoch if c and c.leader_epoch >= 0 else None,
                    )
                )
        return rows

    def log_offsets(self, tps: Iterable[TopicPartition], spec: int) -> dict[TopicPartition, int]:
        tps = list(tps)
        if not tps:
            return {}
        try:
            listed = self.admin.list_offsets(dict.fromkeys(tps, spec), timeout_ms=self.timeout)
        except AdminError as exc:
            listed = exc.results
        return {TopicPartition(*tp): r.offset for tp, r in listed.items()}

    def log_end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self.log_offsets(tps, int(OffsetSpec.LATEST))

    # -- reset -----------------------------------------------------------------------------

    def reset_offsets(self) -> dict[str, dict[TopicPartition, int]]:
        args = self.args
        groups = self.group_ids()
        described: dict[str, ConsumerGroupDescription | None] = {}
        try:
            described.update(self.admin.describe_consumer_groups(groups, timeout_ms=self.timeout))
        except AdminError as exc:
            described.update(exc.results)
            for group, error in exc.errors.items():
                if error.code != Errors.GROUP_ID_NOT_FOUND:
                    raise error from None
                described[group] = None
        result: dict[str, dict[TopicPartition, int]] = {}
        for group in groups:
            desc = described.get(group)
            state = desc.state if desc is not None else "Dead"
            if state not in ("Empty", "Dead"):
                print(
                    f"\nError: Assignments can only be reset if the group '{group}' is inactive, "
                    f"but the current state is {state}."
                )
                result[group] = {}
                continue
            plan = self.prepare_reset(group)
            if args.execute:
                self.admin.alter_consumer_group_offsets(group, plan, timeout_ms=self.timeout)
            result[group] = plan
        return result

    def partitions_to_reset(self, group: str) -> list[TopicPartition]:
        args = self.args
        if args.all_topics:
            return sorted(self.committed(group))
        if args.topic:
            named = [t for t in args.topic if ":" not in t]
            out = [tp for t in args.topic if ":" in t for tp in parse_topic_partitions(t)]
            if named:
                described = self.admin.describe_topics(named, timeout_ms=self.timeout)
                out += [
                    TopicPartition(name, p.partition)
                    for name, d in described.items()
                    for p in d.partitions
                ]
            return out
        if args.from_file is None:
            raise ValueError("One of the reset scopes should be defined: --all-topics, --topic.")
        return []

    def committed(self, group: str) -> dict[TopicPartition, OffsetAndMetadata]:
        offsets = self.admin.list_consumer_group_offsets(group, timeout_ms=self.timeout)
        return {tp: v for tp, v in offsets.items() if v is not None}

    def check_partitions(self, tps: Sequence[TopicPartition]) -> None:
        topics = sorted({tp.topic for tp in tps})
        try:
            described = self.admin.describe_topics(topics, timeout_ms=self.timeout)
        except AdminError as exc:
            described = exc.results
        leaders = {
            TopicPartition(name, p.partition): p.leader
            for name, d in described.items()
            for p in d.partitions
        }
        missing = [tp for tp in tps if tp not in leaders]
        if missing:
            names = ",".join(f"{tp.topic}-{tp.partition}" for tp in missing)
            raise KafkaError(
                Errors.UNKNOWN_TOPIC_OR_PARTITION, f'The partitions "{names}" do not exist'
            )
        leaderless = [tp for tp in tps if leaders[tp] is None or leaders[tp] < 0]
        if leaderless:
            names = ",".join(f"{tp.topic}-{tp.partition}" for tp in leaderless)
            raise KafkaError(
                Errors.LEADER_NOT_AVAILABLE, f'The partitions "{names}" have no leader'
            )

    def clamp(self, requested: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Kafka's checkOffsetsRange: offsets outside the log move to its start or end."""
        starts = self.log_offsets(requested, int(OffsetSpec.EARLIEST))
        ends = self.log_end_offsets(requested)
        out = {}
        for tp, offset in requested.items():
            name = f"{tp.topic}-{tp.partition}"
            if tp in ends and offset > ends[tp]:
                print(
                    f"WARN New offset ({offset}) is higher than latest offset for topic partition "
                    f"{name}. Value will be set to {ends[tp]}.",
                    file=sys.stderr,
                )
                offset = ends[tp]
            elif tp in starts and offset < starts[tp]:
                print(
                    f"WARN New offset ({offset}) is lower than earliest offset for topic partition "
                    f"{name}. Value will be set to {starts[tp]}.",
                    file=sys.stderr,
                )
                offset = starts[tp]
            out[tp] = offset
        return out

    def by_time(self, tps: Sequence[TopicPartition], timestamp: int) -> dict[TopicPartition, int]:
        found = self.log_offsets(tps, timestamp)
        empty = [tp for tp in tps if found.get(tp, -1) < 0]
        for tp in empty:
            print(
                f"\nWarn: Partition {tp.partition} from topic {tp.topic} is empty. Falling back "
                "to latest known offset."
            )
        found.update(self.log_end_offsets(empty))
        return {tp: found[tp] for tp in tps}

    def prepare_reset(self, group: str) -> dict[TopicPartition, int]:
        args = self.args
        if args.from_file is not None:
            try:
                text = open(args.from_file).read()  # noqa: SIM115 - read once
            except OSError as exc:
                raise CommandError(f"{args.from_file} ({exc.strerror})") from None
            plan = parse_reset_file(text, args.group)
            if group not in plan:
                print(f"\nError: No reset plan for group {group} found.")
                return {}
            self.check_partitions(list(plan[group]))
            return self.clamp(plan[group])
        tps = self.partitions_to_reset(group)
        self.check_partitions(tps)
        if args.to_offset is not None:
            return self.clamp(dict.fromkeys(tps, args.to_offset))
        if args.to_earliest:
            return self.required(self.log_offsets(tps, int(OffsetSpec.EARLIEST)), tps, "starting")
        if args.to_latest:
            return self.required(self.log_end_offsets(tps), tps, "ending")
        if args.shift_by is not None:
            current = self.committed(group)
            for tp in tps:
                if tp not in current:
                    raise ValueError(
                        f"Cannot shift offset for partition {tp.topic}-{tp.partition} since "
                        "there is no current committed offset"
                    )
            return self.clamp({tp: current[tp].offset + args.shift_by for tp in tps})
        if args.to_datetime is not None:
            return self.by_time(tps, parse_datetime_ms(args.to_datetime))
        if args.by_duration is not None:
            since = int(time.time() * 1000) - parse_duration_ms(args.by_duration)
            return self.by_time(tps, since)
        if args.to_current:
            current = self.committed(group)
            ends = self.log_end_offsets([tp for tp in tps if tp not in current])
            return {tp: current[tp].offset if tp in current else ends[tp] for tp in tps}
        raise ValueError(
            f"Option '{_opt('reset-offsets')}' requires one of the following scenarios: "
            "[" + ", ".join(_opt(s) for s in _SCENARIOS) + "]"
        )

    def required(
        self, found: Mapping[TopicPartition, int], tps: Sequence[TopicPartition], which: str
    ) -> dict[TopicPartition, int]:
        for tp in tps:
            if tp not in found:
                raise ValueError(
                    f"Error getting {which} offset of topic partition: {tp.topic}-{tp.partition}"
                )
        return {tp: found[tp] for tp in tps}

    # -- delete ----------------------------------------------------------------------------

    def delete_groups(self) -> bool:
        groups = self.group_ids()
        try:
            self.admin.delete_consumer_groups(groups, timeout_ms=self.timeout)
            failed: dict[str, KafkaError] = {}
        except AdminError as exc:
            failed = exc.errors
        done = [g for g in groups if g not in failed]
        if not failed:
            names = ", ".join(f"'{g}'" for g in done)
            print(f"Deletion of requested consumer groups ({names}) was successful.")
            return True
        print("\nError: Deletion of some consumer groups failed:")
        for group, error in failed.items():
            print(f"* Group '{group}' could not be deleted due to: {java_error(error)}")
        if done:
            names = ", ".join(f"'{g}'" for g in done)
            print(f"\nThese consumer groups were deleted successfully: {names}")
        return False

    def delete_offsets(self) -> bool:
        group = self.args.group[0]
        named = [t for t in self.args.topic if ":" not in t]
        partitions = [tp for t in self.args.topic if ":" in t for tp in parse_topic_partitions(t)]
        results: dict[TopicPartition, KafkaError | None] = {}
        if named:
            try:
                described = self.admin.describe_topics(named, timeout_ms=self.timeout)
            except AdminError as exc:
                described = exc.results
                for topic, error in exc.errors.items():
                    results[TopicPartition(topic, -1)] = error
            partitions += [
                TopicPartition(n, p.partition) for n, d in described.items() for p in d.partitions
            ]
        top: KafkaError | None = None
        try:
            self.admin.delete_consumer_group_offsets(group, partitions, timeout_ms=self.timeout)
            results.update(dict.fromkeys(partitions))
        except AdminError as exc:
            top = exc
            results.update(dict.fromkeys(partitions))
            results.update(exc.errors)
        except KafkaError as exc:
            top = exc
            results.update(dict.fromkeys(partitions, exc))
        if top is None:
            print(f"Request succeeded for deleting offsets from group {group}.")
        elif isinstance(top, AdminError):
            print("\nError: Encountered some partition-level error, see the follow-up details.")
        elif top.code in (
            Errors.INVALID_GROUP_ID,
            Errors.GROUP_ID_NOT_FOUND,
            Errors.NON_EMPTY_GROUP,
        ):
            print(f"\nError: {error_message(top)}")
        else:
            print(f"\nError: Encountered some unknown error: {top.name}")
        sys.stdout.write(format_delete_offsets(results))
        return top is None


def validate_regex(regex: str) -> None:
    try:
        re.compile(regex)
        print(f"The regular expression `{regex}` is valid.")
    except re.error as exc:
        print(f"The regular expression `{regex}` is invalid: {exc}.")


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)
    check_args(parser, args)
    if args.validate_regex is not None:
        validate_regex(args.validate_regex)
        return 0
    try:
        props = client_properties(args.bootstrap_server, args.command_config)
        with Admin(props) as admin:
            service = ConsumerGroupService(admin, args, parser)
            if args.list:
                service.list_groups()
            elif args.describe:
                service.describe_groups()
            elif args.delete:
                return 0 if service.delete_groups() else 1
            elif args.delete_offsets:
                return 0 if service.delete_offsets() else 1
            else:
                plan = service.reset_offsets()
                if args.export:
                    print(export_csv(plan, len(args.group) == 1))
                else:
                    sys.stdout.write(format_reset_plan(plan))
    except ValueError as exc:
        if isinstance(exc, ConfigError):
            print(str(exc), file=sys.stderr)
            return 1
        parser.fail(str(exc))
    except CommandError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except KafkaError as exc:
        detail = exc.message if exc.message else str(exc)
        print(f"\nError: Executing consumer group command failed due to {detail}")
        return 1
    return 0
