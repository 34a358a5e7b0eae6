"""A topic's effective log configuration: its overrides over the broker's defaults.

Defaults come from server.properties, overlaid by dynamic broker configs set through
IncrementalAlterConfigs (cluster-wide ``""`` first, then this node's), as in Kafka.
"""

from __future__ import annotations

from typing import Any

from brook.config.defs import Config, ConfigError
from brook.config.server import SERVER_CONFIG, topic_defaults
from brook.config.topic import SERVER_DEFAULT, TOPIC_CONFIG, effective_topic_config
from brook.log.config import LogConfig
from brook.metadata.image import MetadataImage

_TOPIC_KEY_FOR_SERVER_KEY = {server: topic for topic, server in SERVER_DEFAULT.items()}


def broker_defaults(server: Config, image: MetadataImage, node_id: int) -> dict[str, Any]:
    defaults = topic_defaults(server)
    for scope in ("", str(node_id)):
        for key, raw in image.broker_configs(scope).items():
            topic_key = _TOPIC_KEY_FOR_SERVER_KEY.get(key)
            if topic_key is None:
                continue
            try:
                defaults[topic_key] = SERVER_CONFIG.parse_one(key, raw)
            except ConfigError:
                continue
    return defaults


def topic_overrides(image: MetadataImage, topic: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, raw in image.topic_configs(topic).items():
        try:
            out[key] = TOPIC_CONFIG.parse_one(key, raw)
        except ConfigError:
            continue
    return out


def effective(server: Config, image: MetadataImage, node_id: int, topic: str) -> dict[str, Any]:
    return effective_topic_config(
        topic_overrides(image, topic), broker_defaults(server, image, node_id)
    )


def log_config(server: Config, image: MetadataImage, node_id: int, topic: str) -> LogConfig:
    return LogConfig.from_topic_config(effective(server, image, node_id, topic))
