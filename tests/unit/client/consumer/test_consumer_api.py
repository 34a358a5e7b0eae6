"""AsyncConsumer without a broker: configuration rules, the group hook's errors, and the
record type."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from brook import AsyncConsumer, Consumer
from brook.client.consumer import ConsumerRecord, GroupMembershipUnavailableError
from brook.config.defs import ConfigError

BOOT = {"bootstrap.servers": "127.0.0.1:9"}


def test_brook_exports_the_consumer_classes() -> None:
    import brook.client

    assert brook.client.Consumer is Consumer and brook.client.AsyncConsumer is AsyncConsumer


def test_an_unknown_key_and_a_bad_value_are_named() -> None:
    with pytest.raises(ConfigError, match=r"max\.poll\.record"):
        AsyncConsumer({**BOOT, "max.poll.record": 5})
    with pytest.raises(ConfigError, match=r"auto\.offset\.reset"):
        AsyncConsumer({**BOOT, "auto.offset.reset": "smallest"})


def test_explicit_auto_commit_needs_a_group_but_the_default_does_not() -> None:
    with pytest.raises(ConfigError, match=r"enable\.auto\.commit cannot be set to true"):
        AsyncConsumer({**BOOT, "enable.auto.commit": True})
    AsyncConsumer(BOOT)
    AsyncConsumer({**BOOT, "enable.auto.commit": False})
    AsyncConsumer({**BOOT, "group.id": "g", "enable.auto.commit": True})


def test_subscribe_without_group_id_or_with_unknown_assignors_fails_before_any_io() -> None:
    async def main() -> None:
        no_group = AsyncConsumer(BOOT)
        with pytest.raises(GroupMembershipUnavailableError, match=r"valid group\.id"):
            await no_group.subscribe(["t"])
        with pytest.raises(ConfigError, match=r"partition\.assignment\.strategy"):
            AsyncConsumer({**BOOT, "group.id": "g", "partition.assignment.strategy": "nope"})
        grouped = AsyncConsumer({**BOOT, "group.id": "g"})
        # assign() works with a group.id before anything is connected.
        await grouped.assign([("t", 0)])
        assert await grouped.assignment() == {("t", 0)}
        await no_group.close()
        await grouped.close()

    asyncio.run(main())


def test_a_consumer_record_is_a_named_immutable_tuple() -> None:
    r = ConsumerRecord("t", 1, 5, 1000, 0, b"k", b"v", (("h", b"x"),), 3, 1, 1)
    assert (r.topic, r.partition, r.offset, r.timestamp, r.timestamp_type) == ("t", 1, 5, 1000, 0)
    assert (r.key, r.value, r.headers, r.leader_epoch) == (b"k", b"v", (("h", b"x"),), 3)
    assert (r.serialized_key_size, r.serialized_value_size) == (1, 1)
    assert r._replace(value=b"w").value == b"w"
    assert pickle.loads(pickle.dumps(r)) == r
    assert "offset=5" in repr(r)
    with pytest.raises(AttributeError):
        r.offset = 6  # type: ignore[misc]
