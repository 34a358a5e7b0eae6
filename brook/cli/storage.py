"""``brook storage random-uuid | format | info`` (kafka-storage).

``format --cluster-id ID --config server.properties [--ignore-formatted]`` writes
``meta.properties`` (version 1, the cluster id, the node id, a directory id) into every log
directory of that node; every node of a cluster is formatted with the same id before its first
start. ``info --config server.properties`` prints what each directory holds.
"""

from __future__ import annotations

import argparse
import sys

from brook.cli.server import load_config
from brook.config.defs import ConfigError
from brook.config.server import log_dirs, node_id, parse_server_config
from brook.log.meta_properties import StorageCheckError, format_storage, new_uuid, read_all


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
    info = sub.add_parser("info", help="what the log directories hold")
    info.add_argument("--config", "-c", dest="config_opt", required=True, help="server.properties")
    info.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    return parser


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
        written = format_storage(dirs, args.cluster_id, node_id(config), args.ignore_formatted)
    except StorageCheckError as exc:
        print(f"brook storage: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"Formatting {path} with cluster id {args.cluster_id} and node id {node_id(config)}")
    if not written:
        print("All of the log directories are already formatted.")
    return 0
