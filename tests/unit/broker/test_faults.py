"""The ``brook.fault.*`` delays a node runs with: server.properties, then the cluster-wide
dynamic default, then the node's own dynamic value."""

from __future__ import annotations

from brook.broker.faults import (
    FaultDelays,
    concerns_node,
    fault_delays,
)
from brook.config.server import FOLLOWER_FETCH_DELAY_KEY, PRODUCE_DELAY_KEY, parse_server_config
from brook.metadata.image import MetadataImage
from brook.metadata.records import ConfigRecord, ConfigResourceType

BROKER = ConfigResourceType.BROKER


def _set(image: MetadataImage, scope: str, key: str, value: str | None) -> list:
    return image.apply(ConfigRecord(BROKER, scope, key, value), image.offset + 1)


def test_dynamic_values_overlay_the_static_ones() -> None:
    server = parse_server_config({PRODUCE_DELAY_KEY: "5"})
    image = MetadataImage()
    assert fault_delays(server, image, 2) == FaultDelays(produce_ms=5, follower_fetch_ms=0)
    _set(image, "", PRODUCE_DELAY_KEY, "40")
    _set(image, "", FOLLOWER_FETCH_DELAY_KEY, "100")
    assert fault_delays(server, image, 2) == FaultDelays(40, 100)
    _set(image, "2", FOLLOWER_FETCH_DELAY_KEY, "300")
    assert fault_delays(server, image, 2) == FaultDelays(40, 300)
    assert fault_delays(server, image, 3) == FaultDelays(40, 100)  # another node's value
    _set(image, "2", FOLLOWER_FETCH_DELAY_KEY, None)
    _set(image, "", PRODUCE_DELAY_KEY, None)
    assert fault_delays(server, image, 2) == FaultDelays(5, 100)


def test_a_value_no_node_can_parse_leaves_the_delay_as_it_was() -> None:
    server = parse_server_config({})
    image = MetadataImage()
    _set(image, "", PRODUCE_DELAY_KEY, "70")
    _set(image, "1", PRODUCE_DELAY_KEY, "-3")  # written before values were checked
    assert fault_delays(server, image, 1).produce_ms == 70


def test_only_changes_of_this_node_or_the_default_concern_it() -> None:
    image = MetadataImage()
    assert concerns_node(_set(image, "", PRODUCE_DELAY_KEY, "1"), 1)
    assert concerns_node(_set(image, "1", PRODUCE_DELAY_KEY, "1"), 1)
    assert not concerns_node(_set(image, "2", PRODUCE_DELAY_KEY, "1"), 1)
    topic = image.apply(
        ConfigRecord(ConfigResourceType.TOPIC, "1", "retention.ms", "1"), image.offset + 1
    )
    assert not concerns_node(topic, 1)
