"""Which fetcher follows which partition, driven by a real replica manager's role listener as
the metadata image changes: a followed partition joins the fetcher of (its leader, its
fetcher id) at its log end, a new leader epoch restarts its state, and becoming leader,
leaving the assignment or going offline take it out of its fetcher (which stops when empty).
The fetcher id is Kafka's hash."""

from __future__ import annotations

import asyncio
import errno
import uuid
from pathlib import Path

from brook.broker.replica_fetcher.codec import FetchSettings
from brook.broker.replica_fetcher.fetcher import FetcherConfig
from brook.broker.replica_fetcher.manager import (
    ReplicaFetcherManager,
    fetcher_id,
    java_string_hash,
)
from brook.broker.replica_fetcher.state import Phase
from brook.broker.replica_manager import ReplicaManager
from brook.config.server import parse_server_config, topic_defaults
from brook.log.manager import LogManager
from brook.metadata.image import MetadataImage
from brook.metadata.records import (
    Endpoint,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from brook.protocol.records import build_batch, encode_record

T1 = uuid.uuid4()
ME = 1


def test_fetcher_id_is_kafkas_hash() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    # values from a JVM
    assert java_string_hash("the quick brown fox") == 1302335171
    assert java_string_hash("é") == 233
    assert java_string_hash("__consumer_offsets") == -970371369
    assert fetcher_id("__consumer_offsets", 7, 3) == 1
    # abs(31 * hashCode + partition) mod n, in 32-bit arithmetic (it overflows here)
    assert fetcher_id("hello", 3, 7) == 1
    assert {fetcher_id("topic", p, 1) for p in range(50)} == {0}
    assert {fetcher_id("topic", p, 4) for p in range(50)} == {0, 1, 2, 3}


def test_roles_from_the_image_place_partitions_in_fetchers(tmp_path: Path) -> None:
    async def scenario() -> None:
        config = parse_server_config({"log.dirs": str(tmp_path), "num.replica.fetchers": "2"})
        logs = LogManager([str(tmp_path)], topic_defaults(config))
        logs.startup()
        image = MetadataImage()
        endpoints = {n: (Endpoint("PLAINTEXT", "127.0.0.1", 9000 + n),) for n in (1, 2, 3)}
        image.apply_all(
            enumerate(
                [
                    *(
                        RegisterBrokerRecord(n, uuid.uuid4(), n, endpoints[n], fenced=False)
                        for n in (1, 2, 3)
                    ),
                    TopicRecord("t", T1),
                    PartitionRecord(T1, 0, (2, 1, 3), (2, 1, 3), 2),
                    PartitionRecord(T1, 1, (3, 1, 2), (3, 1, 2), 3),
                    PartitionRecord(T1, 2, (1, 2, 3), (1, 2, 3), 1),
                ]
            )
        )
        rm = ReplicaManager(ME, config, logs, image)
        fetchers = ReplicaFetcherManager(
            ME,
            FetcherConfig(FetchSettings(ME)),
            2,
            image=lambda: image,
            listener_name=lambda: "PLAINTEXT",
            broker_epoch=lambda: 5,
            delay_ms=lambda: 0,
            clock=lambda: 0,
            hosted=rm.partitions.get,
        )
        rm.add_role_listener(fetchers.on_role_change)
        rm.startup()

        def apply(record: object) -> None:
            rm.on_metadata_changes(image.apply(record, image.offset + 1))

        t0 = fetchers.fetcher_of(("t", 0))
        t1 = fetchers.fetcher_of(("t", 1))
        assert t0 is not None and (t0.source_id, t0.fetcher_id) == (2, fetcher_id("t", 0, 2))
        assert t1 is not None and (t1.source_id, t1.fetcher_id) == (3, fetcher_id("t", 1, 2))
        assert fetchers.fetcher_of(("t", 2)) is None  # led here
        assert t0._endpoint() == ("127.0.0.1", 9002)

        # a follower log with records of epoch 0 starts at its end under a new epoch
        plog = rm.partitions[("t", 0)].log
        plog.append_as_follower(
            build_batch(
                [encode_record(0, 0, None, b"x", ())],
                base_timestamp=0,
                max_timestamp=0,
                partition_leader_epoch=0,
            )
        )
        apply(PartitionChangeRecord(T1, 0, leader=3))
        moved = fetchers.fetcher_of(("t", 0))
        assert moved is not None and moved.source_id == 3
        state = moved.partitions[("t", 0)].state
        assert (state.phase, state.fetch_offset, state.last_fetched_epoch) == (
            Phase.FETCHING,
            1,
            0,
        )
        assert state.leader_epoch == 1
        assert (2, fetcher_id("t", 0, 2)) not in fetchers.fetchers  # left empty: stopped

        apply(PartitionChangeRecord(T1, 1, leader=ME))  # becomes leader
        assert fetchers.fetcher_of(("t", 1)) is None
        apply(PartitionChangeRecord(T1, 2, leader=2))  # leader to follower
        assert fetchers.fetcher_of(("t", 2)) is not None
        apply(PartitionChangeRecord(T1, 2, replicas=(2, 3), isr=(2, 3)))  # no longer hosted
        assert fetchers.fetcher_of(("t", 2)) is None

        directory = plog.log_dir
        logs.failures.fail(directory, "appending", OSError(errno.EIO, "I/O error"))
        rm.on_log_dir_failure(directory)  # offline
        assert fetchers.fetcher_of(("t", 0)) is None
        assert fetchers.fetchers == {}
        await fetchers.stop()
        rm.shutdown()

    asyncio.run(asyncio.wait_for(scenario(), 30))
