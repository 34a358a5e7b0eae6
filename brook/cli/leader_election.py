"""``brook leader-election``: leader elections as kafka-leader-election.sh
(LeaderElectionCommand) runs them.

    brook leader-election --bootstrap-server 127.0.0.1:9092 --election-type preferred \\
        --all-topic-partitions
    brook leader-election --bootstrap-server 127.0.0.1:9092 --election-type unclean \\
        --topic orders --partition 0
    brook leader-election --bootstrap-server 127.0.0.1:9092 --election-type PREFERRED \\
        --path-to-json-file partitions.json

Kafka's checks in its order and with its messages, its JSON file
(``{"partitions": [{"topic": "foo", "partition": 1}]}``), its output lines (elected,
already elected, one error line per partition that failed) and its exit codes (1 when any
partition failed). Kafka prints partitions in hash-set order; they are sorted here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from brook.client.admin import Admin
from brook.client.admin.types import AdminError, ElectionType
from brook.client.cluster import TopicPartition
from brook.protocol.errors import Errors, KafkaError

from .common import (
    CommandError,
    ToolParser,
    java_exception_text,
    load_properties_file,
    parse_args,
    run,
)

DESCRIPTION = (
    "This tool attempts to elect a new leader for a set of topic partitions. The type of "
    "elections supported are preferred replicas and unclean replicas."
)
# LeaderElectionCommand's default API timeout; the request timeout is half of it.
TIMEOUT_MS = 30000


def build_parser() -> ToolParser:
    p = ToolParser(prog="brook leader-election", description=DESCRIPTION)
    p.add_argument(
        "--bootstrap-server",
        metavar="host:port",
        help="A hostname and port for the broker to connect to, in the form host:port. "
        "Multiple comma separated URLs can be given. REQUIRED.",
    )
    p.add_argument(
        "--admin.config",
        dest="admin_config",
        metavar="config file",
        help="Configuration properties files to pass to the admin client",
    )
    p.add_argument(
        "--command-config",
        dest="command_config",
        metavar="config file",
        help="Configuration properties files to pass to the admin client (the newer name of "
        "--admin.config)",
    )
    p.add_argument(
        "--path-to-json-file",
        metavar="Path to JSON file",
        help="The JSON file with the list  of partition for which leader elections should be "
        'performed. This is an example format. {"partitions": [{"topic": "foo", '
        '"partition": 1}, {"topic": "foobar", "partition": 2}]} Not allowed if '
        "--all-topic-partitions or --topic flags are specified.",
    )
    p.add_argument(
        "--topic",
        metavar="topic name",
        help="Name of topic for which to perform an election. Not allowed if "
        "--path-to-json-file or --all-topic-partitions is specified.",
    )
    p.add_argument(
        "--partition",
        metavar="partition id",
        help="Partition id for which to perform an election. REQUIRED if --topic is specified.",
    )
    p.add_argument(
        "--all-topic-partitions",
        action="store_true",
        help="Perform election on all of the eligible topic partitions based on the type of "
        "election (see the --election-type flag). Not allowed if --topic or "
        "--path-to-json-file is specified.",
    )
    p.add_argument(
        "--election-type",
        metavar="election type",
        help='Type of election to attempt. Possible values are "preferred" for preferred '
        'leader election or "unclean" for unclean leader election. If preferred election is '
        "selection, the election is only performed if the current leader is not the "
        "preferred leader for the topic partition. If unclean election is selected, the "
        "election is only performed if there are no leader for the topic partition. REQUIRED.",
    )
    return p


# ---------------------------------------------------------------------------------------------
# Checks and inputs
# ---------------------------------------------------------------------------------------------


def election_type(value: str) -> ElectionType:
    """Kafka's enum converter: the name in any case."""
    for each in ElectionType:
        if each.name.lower() == value.lower():
            return each
    raise CommandError(f"Cannot parse argument '{value}' of option election-type")


def partition_id(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise CommandError(f"Cannot parse argument '{value}' of option partition") from None


def validate(args: argparse.Namespace) -> None:
    """LeaderElectionCommandOptions.validate: its checks in its order."""
    missing = [
        name
        for name, value in (
            ("bootstrap-server", args.bootstrap_server),
            ("election-type", args.election_type),
        )
        if value is None
    ]
    if missing:
        raise CommandError("Missing required option(s): " + ", ".join(missing))
    given = [
        args.topic is not None,
        args.all_topic_partitions,
        args.path_to_json_file is not None,
    ]
    if sum(given) != 1:
        raise CommandError(
            "One and only one of the following options is required: "
            "topic, all-topic-partitions, path-to-json-file"
        )
    if args.topic is not None and args.partition is None:
        raise CommandError("Missing required option(s): partition")
    if args.topic is None and args.partition is not None:
        raise CommandError("Option partition is only allowed if topic is used")
    if args.admin_config is not None and args.command_config is not None:
        raise CommandError("Only one of admin.config and command-config may be given")


def election_data(text: str) -> list[TopicPartition]:
    """The partitions of Kafka's replica election JSON, refused as Kafka refuses them."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if data is None:
        raise CommandError("Replica election data is empty")
    if not isinstance(data, dict) or "partitions" not in data:
        raise CommandError('Replica election data is missing "partitions" field')
    entries = data["partitions"]
    if not isinstance(entries, list):
        raise CommandError(f"Expected JSON array, received {json.dumps(entries)}")
    partitions: list[TopicPartition] = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise CommandError(f"Expected JSON object, received {json.dumps(entry)}")
        partitions.append(
            TopicPartition(_field(entry, "topic", str), _field(entry, "partition", int))
        )
    duplicates = sorted({tp for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in duplicates)
        raise CommandError(f"Replica election data contains duplicate partitions: [{names}]")
    return sorted(set(partitions))


def _field(entry: Mapping[str, Any], name: str, kind: type) -> Any:
    if name not in entry:
        raise CommandError(f"No such field exists: `{name}`")
    value = entry[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        expected = "String" if kind is str else "Int"
        raise CommandError(f"Expected `{expected}` value, received {json.dumps(value)}")
    return value


def read_json_file(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise CommandError(f"{path} ({exc.strerror})") from None


def admin_properties(args: argparse.Namespace) -> dict[str, Any]:
    """The admin client's properties as Kafka's tool sets them: the file, the bootstrap
    servers, and its timeouts unless the file sets them."""
    props: dict[str, Any] = {}
    config = args.admin_config or args.command_config
    if config:
        props.update(load_properties_file(config))
    props["bootstrap.servers"] = args.bootstrap_server
    props.setdefault("default.api.timeout.ms", str(TIMEOUT_MS))
    props.setdefault("request.timeout.ms", str(TIMEOUT_MS // 2))
    return props


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def partition_names(partitions: Sequence[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(partitions))


def result_lines(
    kind: ElectionType,
    elected: Mapping[TopicPartition, bool],
    failed: Mapping[TopicPartition, KafkaError],
) -> list[str]:
    """Kafka's lines: elected now, already elected, then one line per failure."""
    lines = []
    succeeded = [tp for tp, now in elected.items() if now]
    noop = [tp for tp, now in elected.items() if not now]
    if succeeded:
        lines.append(
            f"Successfully completed leader election ({kind.name}) for partitions "
            + partition_names(succeeded)
        )
    if noop:
        lines.append("Valid replica already elected for partitions " + partition_names(noop))
    for tp in sorted(failed):
        error = failed[tp]
        message = (error.message or "").removeprefix(f"partition {tp.topic}-{tp.partition}: ")
        lines.append(
            f"Error completing leader election ({kind.name}) for partition: "
            f"{tp.topic}-{tp.partition}: {java_exception_text(error.code, message)}"
        )
    return lines


def elect(admin: Admin, kind: ElectionType, partitions: list[TopicPartition] | None) -> int:
    try:
        elected = admin.elect_leaders(kind, partitions)
        failed: dict[TopicPartition, KafkaError] = {}
    except AdminError as exc:
        elected = dict(exc.results)
        failed = dict(exc.errors)
    except KafkaError as exc:
        if exc.code == Errors.REQUEST_TIMED_OUT:
            print("Timeout waiting for election results")
            raise CommandError("Timeout waiting for election results") from None
        if exc.code == Errors.CLUSTER_AUTHORIZATION_FAILED:
            print("Not authorized to perform leader election")
            raise CommandError("Not authorized to perform leader election") from None
        raise
    for line in result_lines(kind, elected, failed):
        print(line)
    if failed:
        raise CommandError(f"{len(failed)} replica(s) could not be elected")
    return 0


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)

    def body() -> int:
        validate(args)
        kind = election_type(args.election_type)
        partitions: list[TopicPartition] | None = None
        if args.path_to_json_file is not None:
            partitions = election_data(read_json_file(args.path_to_json_file))
        elif args.topic is not None:
            partitions = [TopicPartition(args.topic, partition_id(args.partition))]
        with Admin(admin_properties(args)) as admin:
            return elect(admin, kind, partitions)

    return run(body)
