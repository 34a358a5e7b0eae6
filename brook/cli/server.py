"""``brook server [--config server.properties] [--override key=value ...]``

Runs a node with Kafka's server properties. Without a config file it is a single combined
broker/controller on 127.0.0.1:9092 with the internal topics' replication factors of Kafka's
quickstart server.properties (1), so that consumer groups work on one node. SIGINT/SIGTERM
stop it cleanly (checkpoints and the clean-shutdown marker are written).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from brook.config.defs import ConfigError, load_properties
from brook.config.server import QUICKSTART_DEFAULTS, parse_server_config
from brook.protocol.errors import KafkaError


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="brook server", description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", help="server.properties file (positional form)")
    parser.add_argument("--config", dest="config_opt", help="server.properties file")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a property (repeatable)",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return parser.parse_args(argv)


def load_config(args: argparse.Namespace) -> dict[str, str]:
    """The config file's properties, or without one Kafka's quickstart values for a single
    node (internal topics with one replica); then the overrides."""
    props: dict[str, str] = {}
    path = args.config_opt or args.config
    if path:
        file = Path(path)
        if not file.is_file():
            raise ConfigError(f"config file {path} does not exist")
        props.update(load_properties(file.read_text()))
    else:
        props.update(QUICKSTART_DEFAULTS)
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--override expects KEY=VALUE, got '{item}'")
        props[key.strip()] = value.strip()
    return props


def main(argv: list[str]) -> int:
    args = _parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)",
        stream=sys.stderr,
    )
    try:
        config = parse_server_config(load_config(args))
    except ConfigError as exc:
        print(f"brook server: {exc}", file=sys.stderr)
        return 2
    try:
        import uvloop
    except ImportError:
        return asyncio.run(_run(config))
    return uvloop.run(_run(config))


async def _run(config: object) -> int:
    from brook.broker.lifecycle import RegistrationError
    from brook.broker.server import Broker
    from brook.log.meta_properties import StorageCheckError

    broker = Broker(config)  # type: ignore[arg-type]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    log = logging.getLogger("brook")
    starting = asyncio.ensure_future(broker.start())
    signalled = asyncio.ensure_future(stop.wait())
    await asyncio.wait({starting, signalled}, return_when=asyncio.FIRST_COMPLETED)
    code = 0
    if not starting.done():
        # SIGTERM while still starting (waiting for the quorum, registering): stop at once
        log.info("stopping before the node finished starting")
        # Python 3.11's wait_for can swallow a cancellation that races its inner future's
        # completion: cancel again until the start has really ended.
        while not starting.done():
            starting.cancel()
            await asyncio.wait({starting}, timeout=0.5)
        if not starting.cancelled():
            starting.exception()  # retrieved: a start that failed as it was cancelled
    elif starting.exception() is not None:
        exc = starting.exception()
        expected = (OSError, KafkaError, StorageCheckError, RegistrationError)
        log.error("cannot start: %s", exc, exc_info=None if isinstance(exc, expected) else exc)
        code = 1
    else:
        await signalled
    signalled.cancel()
    if starting.cancelled() or starting.exception() is not None:
        await broker.abort()  # as after a crash: the next start recovers what it must
    else:
        await broker.stop()
    return code
