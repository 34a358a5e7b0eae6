"""``brook storage random-uuid | format | info`` (kafka-storage).

``format --cluster-id ID --config server.properties [--ignore-formatted]`` writes
``meta.properties`` (version 1, the cluster id, the node id, a directory id) into every log
directory of that node; every node of a cluster is formatted with the same id before its first
start. ``--add-scram 'SCRAM-SHA-256=[name=alice,password=...]'`` (repeatable, optional
``iterations=``) adds a SCRAM user the new cluster starts with, as kafka-storage does: the
credential (never the password) goes into the bootstrap records of the first log directory,
which the first active controller appends to an empty metadata log.
``info --config server.properties`` prints what each directory holds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from brook.cli.server import load_config
from brook.config.defs import ConfigError
from brook.config.server import log_dirs, node_id, parse_server_config
from brook.log.meta_properties import StorageCheckError, format_storage, new_uuid, read_all
from brook.metadata.bootstrap import write_bootstrap
from brook.metadata.records import UserScramCredentialRecord
from brook.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, new_credential
from brook.security.scram import MECHANISMS as SCRAM_MECHANISMS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="brook storage", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("random-uuid", help="print a new cluster id")
    fmt = sub.add_parser("format", help="format this node's log directories")
    fmt.add_argument("--cluster-id", "-t", required=True, help="the cluster id")
    fmt.add_argument("--config", "-c", dest="config_opt", required=True, help="server.properties")
    fmt.add_argument(
        "--ignore-formatted", "-g", action="store_true", help="leave formatted directories alone"
    )
    fmt.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    fmt.add_argument(
        "--add-scram",
        "-S",
        action="append",
        default=[],
        metavar="MECHANISM=[name=USER,password=PASSWORD]",
        help="a SCRAM user the cluster starts with (SCRAM-SHA-256 or SCRAM-SHA-512)",
    )
    info = sub.add_parser("info", help="what the log directories hold")
    info.add_argument("--config", "-c", dest="config_opt", required=True, help="server.properties")
    info.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    return parser


def scram_record(text: str) -> UserScramCredentialRecord:
    """kafka-storage's ``SCRAM-SHA-256=[name=alice,password=...,iterations=8192]``."""
    mechanism, eq, rest = text.partition("=")
    mech = SCRAM_MECHANISMS.get(mechanism.strip().upper())
    if not eq or mech is None:
        raise ValueError(
            f"--add-scram must start with SCRAM-SHA-256= or SCRAM-SHA-512=, got {mechanism!r}"
        )
    rest = rest.strip()
    if not (rest.startswith("[") and rest.endswith("]")):
        raise ValueError("--add-scram expects MECHANISM=[name=...,password=...]")
    fields: dict[str, str] = {}
    for part in rest[1:-1].split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"--add-scram: {key.strip()!r} is not key=value")
        fields[key.strip().lower()] = value.strip().strip('"')
    unknown = set(fields) - {"name", "password", "iterations"}
    if unknown:
        raise ValueError(f"--add-scram: unknown field(s) {', '.join(sorted(unknown))}")
    if not fields.get("name") or not fields.get("password"):
        raise ValueError("--add-scram needs name=... and password=...")
    iterations = int(fields.get("iterations", str(MIN_ITERATIONS)))
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"--add-scram: iterations must be in [{MIN_ITERATIONS}, {MAX_ITERATIONS}]")
    cred = new_credential(mech, fields["password"], iterations)
    return UserScramCredentialRecord(
        fields["name"], mech.wire_id, cred.salt, cred.stored_key, cred.server_key, iterations
    )


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.action == "random-uuid":
        print(new_uuid())
        return 0
    args.config = None
    try:
        config = parse_server_config(load_config(args))
    except ConfigError as exc:
        print(f"brook storage: {exc}", file=sys.stderr)
        return 2
    dirs = log_dirs(config)
    if args.action == "info":
        for state in read_all(dirs):
            if state.formatted:
                props = " ".join(f"{k}={v}" for k, v in state.props.items())
                print(f"{state.path}: {props}")
            else:
                print(f"{state.path}: not formatted")
        return 0
    try:
        bootstrap = [scram_record(text) for text in args.add_scram]
    except ValueError as exc:
        print(f"brook storage: {exc}", file=sys.stderr)
        return 2
    try:
        written = format_storage(dirs, args.cluster_id, node_id(config), args.ignore_formatted)
    except StorageCheckError as exc:
        print(f"brook storage: {exc}", file=sys.stderr)
        return 1
    if bootstrap and written and Path(dirs[0]) in {Path(p) for p in written}:
        write_bootstrap(dirs[0], bootstrap)
    for path in written:
        print(f"Formatting {path} with cluster id {args.cluster_id} and node id {node_id(config)}")
    if not written:
        print("All of the log directories are already formatted.")
    return 0
