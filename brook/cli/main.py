"""``brook <subcommand>``: dispatch to the subcommand modules, each mirroring a Kafka script."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# subcommand -> (module, help)
COMMANDS: dict[str, tuple[str, str]] = {
    "server": ("brook.cli.server", "run a Brook node (kafka-server-start)"),
    "storage": (
        "brook.cli.storage",
        "make a cluster id, format a node's log directories (kafka-storage)",
    ),
    "cluster": (
        "brook.cli.cluster",
        "start, stop and fault a local multi-process cluster (tests, experiments)",
    ),
    "topics": ("brook.cli.topics", "create, delete, describe or change topics (kafka-topics)"),
    "configs": ("brook.cli.configs", "describe or alter topic and broker configs (kafka-configs)"),
    "acls": ("brook.cli.acls", "add, remove or list ACLs (kafka-acls)"),
    "console-consumer": (
        "brook.cli.console_consumer",
        "print records to stdout (kafka-console-consumer)",
    ),
    "console-producer": (
        "brook.cli.console_producer",
        "send lines of stdin as records (kafka-console-producer)",
    ),
    "producer-perf-test": (
        "brook.cli.producer_perf_test",
        "producer throughput and latency (kafka-producer-perf-test)",
    ),
    "consumer-perf-test": (
        "brook.cli.consumer_perf_test",
        "consumer throughput (kafka-consumer-perf-test)",
    ),
    "get-offsets": ("brook.cli.get_offsets", "offsets of partitions at a time (kafka-get-offsets)"),
    "consumer-groups": (
        "brook.cli.consumer_groups",
        "list, describe, reset or delete consumer groups (kafka-consumer-groups)",
    ),
    "leader-election": (
        "brook.cli.leader_election",
        "elect preferred or unclean partition leaders (kafka-leader-election)",
    ),
    "reassign-partitions": (
        "brook.cli.reassign_partitions",
        "move partition replicas between brokers (kafka-reassign-partitions)",
    ),
    "transactions": (
        "brook.cli.transactions",
        "list, describe and abort transactions, find hanging ones (kafka-transactions)",
    ),
    "metadata-quorum": (
        "brook.cli.metadata_quorum",
        "describe the KRaft metadata quorum (kafka-metadata-quorum)",
    ),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="brook", description="Brook event-streaming platform")
    parser.add_argument("command", choices=sorted(COMMANDS), help="subcommand")
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        lines = [f"  {name:<24}{help_}" for name, (_, help_) in sorted(COMMANDS.items())]
        print("\ncommands:\n" + "\n".join(lines))
        return 0 if argv else 2
    command = argv[0]
    if command not in COMMANDS:
        parser.error(f"unknown command '{command}'")
    module = importlib.import_module(COMMANDS[command][0])
    try:
        return int(module.main(argv[1:]) or 0)
    except BrokenPipeError:
        # Output piped into something that stopped reading (``| head``): not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
