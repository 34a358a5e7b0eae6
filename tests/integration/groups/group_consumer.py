"""A group consumer of one client library in its own process, for the group suites: one JSON
line per event on stdout, a clean close (leaving the group) on SIGTERM, and SIGKILL to crash it.
Usage: group_consumer.py {kafka-python|confluent|aiokafka|brook} BOOTSTRAP TOPIC GROUP SESSION_MS
[JSON of extra Brook consumer properties]
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from typing import Any

stop = False


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"ev": event, **fields}), flush=True)


def on_term(*_: object) -> None:
    global stop
    stop = True


def run_kafka_python(bootstrap: str, topic: str, group: str, session_ms: int) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            pass

        def on_partitions_assigned(self, assigned: Any) -> None:
            emit("assigned", tps=sorted([tp.topic, tp.partition] for tp in assigned))

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id="kp",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=max(session_ms // 6, 100),
    )
    consumer.subscribe([topic], listener=Listener())
    while not stop:
        batches = consumer.poll(timeout_ms=200)
        for tp, records in batches.items():
            for r in records:
                emit("rec", p=tp.partition, o=r.offset, v=r.value.decode())
        if batches:
            consumer.commit()
            emit("committed")
    consumer.close()


def run_confluent(bootstrap: str, topic: str, group: str, session_ms: int) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": "ck",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": max(session_ms // 6, 100),
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )

    def on_assign(_: Any, partitions: Any) -> None:
        emit("assigned", tps=sorted([p.topic, p.partition] for p in partitions))

    consumer.subscribe([topic], on_assign=on_assign)
    while not stop:
        msgs = consumer.consume(num_messages=100, timeout=0.2)
        got = False
        for m in msgs:
            if m.error():
                continue
            got = True
            emit("rec", p=m.partition(), o=m.offset(), v=m.value().decode())
        if got:
            consumer.commit(asynchronous=False)
            emit("committed")
    consumer.close()


async def run_aiokafka(bootstrap: str, topic: str, group: str, session_ms: int) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: Any) -> None:
            pass

        async def on_partitions_assigned(self, assigned: Any) -> None:
            emit("assigned", tps=sorted([tp.topic, tp.partition] for tp in assigned))

    done = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id="aio",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=max(session_ms // 6, 100),
        metadata_max_age_ms=1000,
    )
    consumer.subscribe([topic], listener=Listener())
    await consumer.start()
    try:
        while not done.is_set():
            batches = await consumer.getmany(timeout_ms=200)
            for tp, records in batches.items():
                for r in records:
                    emit("rec", p=tp.partition, o=r.offset, v=r.value.decode())
            if batches:
                await consumer.commit()
                emit("committed")
    finally:
        await consumer.stop()


def run_brook(
    bootstrap: str, topic: str, group: str, session_ms: int, extra: dict[str, Any]
) -> None:
    from brook import Consumer

    class Listener:
        def on_partitions_revoked(self, revoked: Any) -> None:
            emit("revoked", tps=sorted([tp.topic, tp.partition] for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            emit("assigned", tps=sorted([tp.topic, tp.partition] for tp in assigned))

        def on_partitions_lost(self, lost: Any) -> None:
            emit("lost", tps=sorted([tp.topic, tp.partition] for tp in lost))

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": "brook",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": max(session_ms // 6, 100),
            "metadata.max.age.ms": 1000,
            **extra,
        }
    )
    consumer.subscribe([topic], listener=Listener())
    while not stop:
        records = consumer.poll(timeout_ms=200)
        for r in records:
            emit("rec", p=r.partition, o=r.offset, v=r.value.decode())
        if records:
            consumer.commit()
            emit("committed")
    consumer.close()


def main() -> None:
    lib, bootstrap, topic, group, session = sys.argv[1:6]
    extra = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
    signal.signal(signal.SIGTERM, on_term)
    emit("started")
    if lib == "kafka-python":
        run_kafka_python(bootstrap, topic, group, int(session))
    elif lib == "confluent":
        run_confluent(bootstrap, topic, group, int(session))
    elif lib == "aiokafka":
        asyncio.run(run_aiokafka(bootstrap, topic, group, int(session)))
    elif lib == "brook":
        run_brook(bootstrap, topic, group, int(session), extra)
    else:
        raise SystemExit(f"unknown library {lib}")
    emit("closed")


if __name__ == "__main__":
    main()
