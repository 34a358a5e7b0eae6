"""``brook reassign-partitions``: partition reassignments as kafka-reassign-partitions.sh
(ReassignPartitionsCommand) drives them.

    brook reassign-partitions --bootstrap-server 127.0.0.1:9092 --generate \\
        --topics-to-move-json-file topics.json --broker-list 1,2,3
    brook reassign-partitions --bootstrap-server 127.0.0.1:9092 --execute \\
        --reassignment-json-file plan.json
    brook reassign-partitions --bootstrap-server 127.0.0.1:9092 --verify \\
        --reassignment-json-file plan.json
    brook reassign-partitions --bootstrap-server 127.0.0.1:9092 --cancel \\
        --reassignment-json-file plan.json
    brook reassign-partitions --bootstrap-server 127.0.0.1:9092 --list

Kafka's actions, option checks (usage errors on standard error), JSON in and out, output
lines and exit codes; like Kafka's tool it prints its other errors on standard output
(``Error: ...``). Two departures, both said where they apply: Brook brokers do not throttle
replication, so ``--throttle`` and ``--replica-alter-log-dirs-throttle`` are accepted and
a note says they are not applied (and ``--verify`` / ``--cancel`` have no throttle to clear);
and replicas are not moved between log directories, so ``log_dirs`` other than ``"any"`` are
refused.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from brook.client.admin import Admin
from brook.client.admin.types import AdminError, PartitionReassignment
from brook.client.cluster import BrokerNode, TopicPartition
from brook.config.defs import ConfigError
from brook.protocol.errors import Errors, KafkaError

from .common import (
    CommandError,
    ToolParser,
    java_exception_text,
    load_properties_file,
    parse_args,
)

HELP_TEXT = "This tool helps to move topic partitions between replicas."
ANY_LOG_DIR = "any"
ACTIONS = ("generate", "execute", "verify", "cancel", "list")
CANNOT_EXECUTE_BECAUSE_OF_EXISTING = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. The "
    "--additional flag can also be used to change the throttle by resubmitting the current "
    "reassignment."
)
THROTTLE_NOTE = (
    "Note: Brook brokers do not throttle replication; the {flags} given {verb} not applied."
)
NO_THROTTLES_NOTE = "Brook brokers do not throttle replication: there are no throttles to clear."

# Kafka's ReassignPartitionsCommand: what each action requires and permits besides itself.
REQUIRED: dict[str, tuple[str, ...]] = {
    "verify": ("reassignment-json-file",),
    "generate": ("topics-to-move-json-file", "broker-list"),
    "execute": ("reassignment-json-file",),
    "cancel": ("reassignment-json-file",),
    "list": (),
}
PERMITTED: dict[str, tuple[str, ...]] = {
    "verify": ("command-config", "preserve-throttles"),
    "generate": ("broker-list", "command-config", "disable-rack-aware"),
    "execute": (
        "additional",
        "command-config",
        "throttle",
        "replica-alter-log-dirs-throttle",
        "timeout",
    ),
    "cancel": ("command-config", "preserve-throttles", "timeout"),
    "list": ("command-config",),
}


class TerseError(Exception):
    """Kafka's TerseException: the message alone on standard output, exit 1."""


class ToolFailure(Exception):
    """Any other failure: ``Error: <message>`` on standard output, exit 1."""


def build_parser() -> ToolParser:
    p = ToolParser(prog="brook reassign-partitions", description=HELP_TEXT)
    p.add_argument(
        "--bootstrap-server",
        metavar="Server(s) to use for bootstrapping",
        help="the server(s) to use for bootstrapping. REQUIRED if --bootstrap-controller is "
        "not specified.",
    )
    p.add_argument(
        "--bootstrap-controller",
        metavar="Controller(s) to use for bootstrapping",
        help="the controller(s) to use for bootstrapping (not supported with any action, as "
        "in Kafka)",
    )
    p.add_argument(
        "--command-config",
        metavar="Admin client property file",
        help="Property file containing configs to be passed to Admin Client.",
    )
    for action, text in (
        ("generate", "Generate a candidate partition reassignment configuration. Note that this "
         "only generates a candidate assignment, it does not execute it."),
        ("execute", "Kick off the reassignment as specified by the --reassignment-json-file "
         "option."),
        ("verify", "Verify if the reassignment completed as specified by the "
         "--reassignment-json-file option."),
        ("cancel", "Cancel an active reassignment."),
        ("list", "List all active partition reassignments."),
    ):  # fmt: skip
        p.add_argument(f"--{action}", action="store_true", help=text)
    p.add_argument(
        "--reassignment-json-file",
        metavar="manual assignment json file path",
        help="The JSON file with the partition reassignment configuration. The format to use "
        'is - {"partitions": [{"topic": "foo", "partition": 1, "replicas": [1,2,3], '
        '"log_dirs": ["dir1","dir2","dir3"] }], "version":1} Note that "log_dirs" is '
        "optional. When it is specified, its length must equal the length of the replicas "
        'list. The value in this list can be either "any" or the absolution path of the log '
        "directory on the broker.",
    )
    p.add_argument(
        "--topics-to-move-json-file",
        metavar="topics to reassign json file path",
        help="Generate a reassignment configuration to move the partitions of the specified "
        "topics to the list of brokers specified by the --broker-list option. The format to "
        'use is - {"topics": [{"topic": "foo"},{"topic": "foo1"}], "version":1}',
    )
    p.add_argument(
        "--broker-list",
        metavar="brokerlist",
        help="The list of brokers to which the partitions need to be reassigned in the form "
        '"0,1,2". This is required if --topics-to-move-json-file is used to generate '
        "reassignment configuration",
    )
    p.add_argument(
        "--disable-rack-aware", action="store_true", help="Disable rack aware replica assignment"
    )
    p.add_argument(
        "--throttle",
        metavar="throttle",
        help="The movement of partitions between brokers will be throttled to this value "
        "(bytes/sec). Accepted; Brook brokers do not throttle replication.",
    )
    p.add_argument(
        "--replica-alter-log-dirs-throttle",
        metavar="replicaAlterLogDirsThrottle",
        help="The movement of replicas between log directories on the same broker will be "
        "throttled to this value (bytes/sec). Accepted; not applied by Brook brokers.",
    )
    p.add_argument(
        "--timeout",
        metavar="timeout",
        help="The maximum time in ms to wait for log directory replica assignment to begin.",
    )
    p.add_argument(
        "--additional",
        action="store_true",
        help="Execute this reassignment in addition to any other ongoing ones. This option can "
        "also be used to change the throttle of an ongoing reassignment.",
    )
    p.add_argument(
        "--preserve-throttles",
        action="store_true",
        help="Do not modify broker or topic throttles.",
    )
    return p


# ---------------------------------------------------------------------------------------------
# Options: Kafka's validateAndParseArgs
# ---------------------------------------------------------------------------------------------


def given_options(
    parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str]
) -> list[str]:
    """The options given (by name, without dashes), in the order they first appear on the
    command line (argparse also takes unambiguous abbreviations, as Kafka's parser does)."""
    given = []
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        if action.option_strings and action.dest != "help" and value not in (None, False):
            given.append(action.option_strings[0][2:])

    def position(name: str) -> int:
        for i, arg in enumerate(argv):
            flag = arg.split("=", 1)[0]
            if flag.startswith("--") and len(flag) > 2 and f"--{name}".startswith(flag):
                return i
        return len(argv)

    return sorted(given, key=position)


def usage_error(parser: ToolParser, message: str) -> NoReturn:
    """CommandLineUtils.printUsageAndExit: the message and the usage on stderr, exit 1."""
    print(message, file=sys.stderr)
    parser.print_usage(sys.stderr)
    raise SystemExit(1)


def check_options(parser: ToolParser, given: Sequence[str]) -> str:
    """The action, once the options pass Kafka's checks in its order."""
    actions = [a for a in ACTIONS if a in given]
    if len(actions) != 1:
        usage_error(
            parser,
            "Command must include exactly one action: " + ", ".join(f"--{a}" for a in ACTIONS),
        )
    action = actions[0]
    if "bootstrap-server" in given and "bootstrap-controller" in given:
        usage_error(
            parser, "Please don't specify both --bootstrap-server and --bootstrap-controller"
        )
    if "bootstrap-server" not in given and "bootstrap-controller" not in given:
        usage_error(parser, "Please specify either --bootstrap-server or --bootstrap-controller")
    bootstrap = "bootstrap-server" if "bootstrap-server" in given else "bootstrap-controller"
    for required in REQUIRED[action]:
        if required not in given:
            usage_error(parser, f'Missing required argument "[{required}]"')
    allowed = {action, bootstrap, *REQUIRED[action], *PERMITTED[action]}
    for name in given:
        if name not in allowed:
            usage_error(parser, f'Option "[{name}]" can\'t be used with action "[{action}]"')
    return action


def long_value(value: str | None, option: str, default: int) -> int:
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise TerseError(f"Cannot parse argument '{value}' of option {option}") from None


# ---------------------------------------------------------------------------------------------
# JSON in and out
# ---------------------------------------------------------------------------------------------


def reassignment_json(
    assignment: Mapping[TopicPartition, Sequence[int]],
) -> str:
    """formatAsReassignmentJson: version 1, partitions sorted, every log dir "any"."""
    partitions = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "replicas": list(assignment[tp]),
            "log_dirs": [ANY_LOG_DIR] * len(assignment[tp]),
        }
        for tp in sorted(assignment)
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def _load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ToolFailure(f"Malformed JSON: {exc}") from None


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ToolFailure(f"Expected JSON object, received {json.dumps(value)}")
    return value


def _array(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ToolFailure(f"Expected JSON array, received {json.dumps(value)}")
    return value


def _field(entry: Mapping[str, Any], name: str) -> Any:
    if name not in entry:
        raise ToolFailure(f"No such field exists: `{name}`")
    return entry[name]


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ToolFailure(f"Expected `Int` value, received {json.dumps(value)}")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ToolFailure(f"Expected `String` value, received {json.dumps(value)}")
    return value


def _version(data: dict[str, Any]) -> int:
    version = _int(data["version"]) if "version" in data else 1
    if version != 1:
        raise ToolFailure(f"Not supported version field value {version}")
    return version


def parse_topics_data(text: str) -> list[str]:
    """The topics of a --topics-to-move-json-file: ``{"topics": [{"topic": "foo"}]}``."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if data is None:
        raise ToolFailure("The input string is not a valid JSON")
    data = _object(data)
    _version(data)
    return [_str(_field(_object(e), "topic")) for e in _array(data.get("topics", []))]


def parse_reassignment_data(text: str) -> list[tuple[TopicPartition, list[int]]]:
    """The partitions of a --reassignment-json-file, in file order, duplicates kept so they
    can be refused; log directories other than "any" are refused (Brook does not move
    replicas between log directories)."""
    data = _object(_load_json(text))
    _version(data)
    out: list[tuple[TopicPartition, list[int]]] = []
    for raw in _array(data.get("partitions", [])):
        entry = _object(raw)
        tp = TopicPartition(_str(_field(entry, "topic")), _int(_field(entry, "partition")))
        replicas = [_int(r) for r in _array(_field(entry, "replicas"))]
        if "log_dirs" in entry:
            log_dirs = [_str(d) for d in _array(entry["log_dirs"])]
        else:
            log_dirs = [ANY_LOG_DIR] * len(replicas)
        if len(replicas) != len(log_dirs):
            raise ToolFailure(
                f"Size of replicas list {_java_list(replicas)} is different from size of log "
                f"dirs list {_java_list(log_dirs)} for partition {tp.topic}-{tp.partition}"
            )
        if any(d != ANY_LOG_DIR for d in log_dirs):
            raise ToolFailure(
                f"Partition {tp.topic}-{tp.partition}: moving replicas between log directories "
                'is not supported by Brook; give "any" for every log dir'
            )
        out.append((tp, replicas))
    return out


def _java_list(items: Sequence[Any]) -> str:
    return "[" + ", ".join(str(i) for i in items) + "]"


def _name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def check_execute_data(
    parts: list[tuple[TopicPartition, list[int]]],
) -> dict[TopicPartition, list[int]]:
    """parseExecuteAssignmentArgs's checks, in its order."""
    if not parts:
        raise ToolFailure("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parts):
        raise ToolFailure("Partition replica list cannot be empty")
    tps = [tp for tp, _ in parts]
    duplicated = sorted({tp for tp in tps if tps.count(tp) > 1})
    if duplicated:
        raise ToolFailure(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(_name(tp) for tp in duplicated)
        )
    repeated = [
        (tp, sorted({r for r in replicas if replicas.count(r) > 1})) for tp, replicas in parts
    ]
    repeated = [(tp, rs) for tp, rs in repeated if rs]
    if repeated:
        detail = ". ".join(
            f"{_name(tp)} contains multiple entries for {','.join(map(str, rs))}"
            for tp, rs in repeated
        )
        raise ToolFailure(f"Partition replica lists may not contain duplicate entries: {detail}")
    return dict(parts)


# ---------------------------------------------------------------------------------------------
# --generate: Kafka's AdminUtils.assignReplicasToBrokers
# ---------------------------------------------------------------------------------------------


def assign_replicas(
    brokers: Sequence[BrokerNode],
    partitions: int,
    replication_factor: int,
    rng: random.Random,
) -> list[list[int]]:
    """Replicas for partitions 0..n-1 from a random start; rack-aware (racks alternate, a
    partition's replicas on distinct racks while racks remain) when the brokers have racks."""
    if partitions <= 0:
        raise ToolFailure("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise ToolFailure("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise ToolFailure(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    if all(b.rack is None for b in brokers):
        ordered = sorted(b.node_id for b in brokers)
        return _assign(ordered, None, partitions, replication_factor, rng)
    if any(b.rack is None for b in brokers):
        raise ToolFailure(
            "Not all brokers have rack information for replica rack aware assignment."
        )
    racks = {b.node_id: str(b.rack) for b in brokers}
    return _assign(_rack_alternated(racks), racks, partitions, replication_factor, rng)


def _rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Brokers taken one rack at a time, racks in name order, brokers in id order."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    queues = [by_rack[r] for r in sorted(by_rack)]
    out: list[int] = []
    i = 0
    while len(out) < len(racks):
        if queues[i]:
            out.append(queues[i].pop(0))
        i = (i + 1) % len(queues)
    return out


def _assign(
    arranged: list[int],
    racks: Mapping[int, str] | None,
    partitions: int,
    replication_factor: int,
    rng: random.Random,
) -> list[list[int]]:
    n = len(arranged)
    num_racks = len(set(racks.values())) if racks else 1
    start = rng.randrange(n)
    shift = rng.randrange(n)
    out: list[list[int]] = []
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = arranged[first]
        replicas = [leader]
        if racks is None:
            for j in range(replication_factor - 1):
                replicas.append(arranged[_replica_index(first, shift, j, n)])
        else:
            used_racks = {racks[leader]}
            k = 0
            for _ in range(replication_factor - 1):
                while True:
                    broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                    k += 1
                    rack = racks[broker]
                    if (rack not in used_racks or len(used_racks) == num_racks) and (
                        broker not in replicas or len(replicas) == n
                    ):
                        replicas.append(broker)
                        used_racks.add(rack)
                        break
        out.append(replicas)
    return out


def _replica_index(first: int, shift: int, index: int, n: int) -> int:
    return (first + 1 + (shift + index) % (n - 1)) % n


def parse_broker_list(text: str) -> list[int]:
    brokers = []
    for item in text.split(","):
        try:
            brokers.append(int(item))
        except ValueError:
            raise ToolFailure(f'For input string: "{item}"') from None
    duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
    if duplicates:
        raise ToolFailure(f"Broker list contains duplicate entries: {_java_list(duplicates)}")
    return brokers


def generate(admin: Admin, topics_text: str, broker_list: str, rack_aware: bool) -> None:
    brokers_wanted = parse_broker_list(broker_list)
    topics = parse_topics_data(topics_text)
    duplicates = sorted({t for t in topics if topics.count(t) > 1})
    if duplicates:
        raise ToolFailure(
            f"List of topics to reassign contains duplicate entries: {_java_list(duplicates)}"
        )
    current = current_assignment(admin, topics)
    nodes = [b for b in admin.describe_cluster().brokers if b.node_id in set(brokers_wanted)]
    if not rack_aware:
        nodes = [BrokerNode(b.node_id, b.host, b.port, None) for b in nodes]
    racked = [b for b in nodes if b.rack is not None]
    if rack_aware and racked and len(racked) != len(nodes):
        raise ToolFailure(
            "Not all brokers have rack information. Add --disable-rack-aware in command line "
            "to make replica assignment without rack information."
        )
    rng = random.Random()
    proposed: dict[TopicPartition, list[int]] = {}
    for topic in sorted({tp.topic for tp in current}):
        parts = sorted(tp for tp in current if tp.topic == topic)
        rf = len(current[parts[0]])
        for p, replicas in enumerate(assign_replicas(nodes, len(parts), rf, rng)):
            proposed[TopicPartition(topic, p)] = replicas
    print(f"Current partition replica assignment\n{reassignment_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{reassignment_json(proposed)}")


def current_assignment(admin: Admin, topics: Sequence[str]) -> dict[TopicPartition, list[int]]:
    """Every partition's replicas; an unknown topic fails the command, as in Kafka."""
    if not topics:
        return {}
    try:
        described = admin.describe_topics(sorted(set(topics)))
    except AdminError as exc:
        for topic, error in exc.errors.items():
            if error.code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
                raise ToolFailure(
                    java_exception_text(error.code, f"Topic {topic} not found.")
                ) from None
        raise
    return {
        TopicPartition(name, info.partition): list(info.replicas)
        for name, description in described.items()
        for info in description.partitions
    }


# ---------------------------------------------------------------------------------------------
# --execute, --verify, --cancel, --list
# ---------------------------------------------------------------------------------------------


def execute(
    admin: Admin, text: str, additional: bool, throttle: int, log_dir_throttle: int
) -> None:
    proposed = check_execute_data(parse_reassignment_data(text))
    ongoing = admin.list_partition_reassignments()
    if not additional and ongoing:
        raise TerseError(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
    known = {b.node_id for b in admin.describe_cluster().brokers}
    for broker in sorted({r for replicas in proposed.values() for r in replicas}):
        if broker not in known:
            raise ToolFailure(f"Unknown broker id {broker}")
    current = _assignment_of(admin, set(proposed))
    print(
        "Current partition replica assignment\n\n"
        f"{reassignment_json(current)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )
    flags = [
        flag
        for flag, value in (
            ("--throttle", throttle),
            ("--replica-alter-log-dirs-throttle", log_dir_throttle),
        )
        if value >= 0
    ]
    if flags:
        verb = "is" if len(flags) == 1 else "are"
        print(THROTTLE_NOTE.format(flags=" and ".join(flags), verb=verb))
    errors = _alter(admin, {tp: r for tp, r in proposed.items()})
    if errors:
        raise TerseError(
            "Error reassigning partition(s):\n"
            + "\n".join(f"{_name(tp)}: {errors[tp]}" for tp in sorted(errors))
        )
    plural = "" if len(proposed) == 1 else "s"
    print(
        f"Successfully started partition reassignment{plural} for "
        + ",".join(_name(tp) for tp in sorted(proposed))
    )


def _assignment_of(
    admin: Admin, partitions: set[TopicPartition]
) -> dict[TopicPartition, list[int]]:
    """getReplicaAssignmentForPartitions: a partition that does not exist fails."""
    current = current_assignment(admin, sorted({tp.topic for tp in partitions}))
    found = {tp: r for tp, r in current.items() if tp in partitions}
    missing = sorted(partitions - found.keys())
    if missing:
        raise ToolFailure(
            java_exception_text(
                Errors.UNKNOWN_TOPIC_OR_PARTITION,
                "Unable to find partition: " + ", ".join(_name(tp) for tp in missing),
            )
        )
    return found


def _alter(
    admin: Admin, targets: Mapping[TopicPartition, list[int] | None]
) -> dict[TopicPartition, str]:
    """Per-partition error messages of AlterPartitionReassignments (as Java's getMessage)."""
    try:
        admin.alter_partition_reassignments(
            {(tp.topic, tp.partition): r for tp, r in targets.items()}
        )
    except AdminError as exc:
        return {
            TopicPartition(*tp): (e.message or "").removeprefix(f"partition {tp[0]}-{tp[1]}: ")
            or e.name
            for tp, e in exc.errors.items()
        }
    return {}


def reassignment_states(
    targets: Sequence[tuple[TopicPartition, list[int]]],
    ongoing: Mapping[TopicPartition, PartitionReassignment],
    current: Mapping[TopicPartition, list[int]],
) -> list[str]:
    """partitionReassignmentStatesToString: one line per partition of the file."""
    lines = ["Status of partition reassignment:"]
    for tp, target in sorted(dict(targets).items()):
        if tp in ongoing:
            lines.append(f"Reassignment of partition {_name(tp)} is still in progress.")
            continue
        replicas = current.get(tp, [])
        if replicas == target:
            lines.append(f"Reassignment of partition {_name(tp)} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {_name(tp)}, but replica set is "
                f"{','.join(map(str, replicas))} rather than {','.join(map(str, target))}."
            )
    return lines


def verify(admin: Admin, text: str, preserve_throttles: bool) -> None:
    targets = parse_reassignment_data(text)
    ongoing = admin.list_partition_reassignments()
    topics = sorted({tp.topic for tp, _ in targets if tp not in ongoing})
    current: dict[TopicPartition, list[int]] = {}
    if topics:
        try:
            described = admin.describe_topics(topics)
        except AdminError as exc:
            described = {t: d for t, d in exc.results.items() if d is not None}
            unknown = [
                e for e in exc.errors.values() if e.code != Errors.UNKNOWN_TOPIC_OR_PARTITION
            ]
            if unknown:
                raise unknown[0] from None
        current = {
            TopicPartition(name, info.partition): list(info.replicas)
            for name, description in described.items()
            for info in description.partitions
        }
    print("\n".join(reassignment_states(targets, ongoing, current)))
    print()  # the (empty) status of log directory moves, as Kafka prints it
    if not ongoing and not preserve_throttles:
        print(NO_THROTTLES_NOTE)


def cancel(admin: Admin, text: str, preserve_throttles: bool) -> None:
    targets = parse_reassignment_data(text)
    wanted = sorted({tp for tp, _ in targets})
    listed = admin.list_partition_reassignments([(tp.topic, tp.partition) for tp in wanted])
    # Kafka's condition, kept as it is
    active = sorted(tp for tp, r in listed.items() if not r.adding_replicas or r.removing_replicas)
    if active:
        errors = _alter(admin, {tp: None for tp in active})
        if errors:
            plural = "" if len(errors) == 1 else "s"
            raise TerseError(
                f"Error cancelling partition reassignment{plural} for:\n"
                + "\n".join(f"{_name(tp)}: {errors[tp]}" for tp in sorted(errors))
            )
        plural = "" if len(active) == 1 else "s"
        print(
            f"Successfully cancelled partition reassignment{plural} for: "
            + ",".join(_name(tp) for tp in active)
        )
    else:
        print("None of the specified partition reassignments are active.")
    print(
        "None of the specified partition moves are active.", end="" if preserve_throttles else "\n"
    )
    if not preserve_throttles:
        print(NO_THROTTLES_NOTE)


def list_reassignments(admin: Admin) -> None:
    ongoing = admin.list_partition_reassignments()
    if not ongoing:
        print("No partition reassignments found.")
        return
    lines = ["Current partition reassignments:"]
    for tp in sorted(ongoing):
        r = ongoing[tp]
        line = f"{_name(tp)}: replicas: {','.join(map(str, r.replicas))}."
        if r.adding_replicas:
            line += f" adding: {','.join(map(str, r.adding_replicas))}."
        if r.removing_replicas:
            line += f" removing: {','.join(map(str, r.removing_replicas))}."
        lines.append(line)
    print("\n".join(lines))


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError as exc:
        raise ToolFailure(f"{path} ({exc.strerror})") from None


def check_input(action: str, text: str, broker_list: str | None) -> None:
    """The file's (and broker list's) checks, before any connection, as in Kafka."""
    if action == "generate":
        parse_broker_list(broker_list or "")
        parse_topics_data(text)
    elif action == "execute":
        check_execute_data(parse_reassignment_data(text))
    elif action in ("verify", "cancel"):
        parse_reassignment_data(text)


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)
    action = check_options(parser, given_options(parser, args, argv))
    try:
        if args.bootstrap_controller is not None:
            raise ToolFailure(
                "The --bootstrap-controller option is not supported with these action."
            )
        props: dict[str, Any] = {}
        if args.command_config:
            props.update(load_properties_file(args.command_config))
        props["bootstrap.servers"] = args.bootstrap_server
        props.setdefault("client.id", "reassign-partitions-tool")
        throttle = long_value(args.throttle, "throttle", -1)
        log_dir_throttle = long_value(
            args.replica_alter_log_dirs_throttle, "replica-alter-log-dirs-throttle", -1
        )
        long_value(args.timeout, "timeout", 10000)
        path = (
            args.topics_to_move_json_file if action == "generate" else args.reassignment_json_file
        )
        text = _read(path) if path is not None else ""
        check_input(action, text, args.broker_list)
        with Admin(props) as admin:
            if action == "verify":
                verify(admin, text, args.preserve_throttles)
            elif action == "generate":
                generate(admin, text, args.broker_list, not args.disable_rack_aware)
            elif action == "execute":
                execute(admin, text, args.additional, throttle, log_dir_throttle)
            elif action == "cancel":
                cancel(admin, text, args.preserve_throttles)
            else:
                list_reassignments(admin)
    except TerseError as exc:
        print(str(exc))
        return 1
    except (ToolFailure, CommandError, ConfigError) as exc:
        print(f"Error: {exc}")
        return 1
    except KafkaError as exc:
        print(f"Error: {java_exception_text(exc.code, exc.message)}")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
