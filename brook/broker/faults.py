"""Fault injection for experiments: the ``brook.fault.*`` delays a node takes at run time.

Each delay is a dynamic broker config, as in Kafka's KIP-226: the value in server.properties,
overlaid by the cluster-wide default (broker resource ``""``) and then by this node's own
resource, both set through IncrementalAlterConfigs (``brook cluster slow``, ``brook configs
--alter --entity-type brokers``). They live in the metadata log, so a restarted node keeps
them. The produce handler reads ``Broker.fault_produce_delay_ms`` on every response; the
replica fetcher waits ``Broker.fault_follower_fetch_delay_ms`` before each fetch it sends as a
follower.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from brook.config.defs import Config, ConfigError
from brook.config.server import FOLLOWER_FETCH_DELAY_KEY, PRODUCE_DELAY_KEY, SERVER_CONFIG
from brook.metadata.image import Change, ConfigChanged, MetadataImage
from brook.metadata.records import ConfigResourceType

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FaultDelays:
    produce_ms: int = 0
    follower_fetch_ms: int = 0


def _effective(server: Config, image: MetadataImage, node_id: int, key: str) -> int:
    value = int(server[key])
    for scope in ("", str(node_id)):  # the node's own value wins over the cluster default
        raw = image.broker_configs(scope).get(key)
        if raw is None:
            continue
        try:
            value = int(SERVER_CONFIG.parse_one(key, raw))
        except ConfigError as exc:  # stored before values were checked: keep the previous one
            log.warning("ignoring dynamic %s on broker resource '%s': %s", key, scope, exc)
    return value


def fault_delays(server: Config, image: MetadataImage, node_id: int) -> FaultDelays:
    """The delays in force on ``node_id`` given the committed metadata."""
    return FaultDelays(
        _effective(server, image, node_id, PRODUCE_DELAY_KEY),
        _effective(server, image, node_id, FOLLOWER_FETCH_DELAY_KEY),
    )


def concerns_node(changes: Iterable[Change], node_id: int) -> bool:
    """Whether a metadata change may move this node's delays: its broker resource or the
    cluster default changed."""
    return any(
        isinstance(c, ConfigChanged)
        and c.resource_type == ConfigResourceType.BROKER
        and c.resource_name in ("", str(node_id))
        for c in changes
    )
