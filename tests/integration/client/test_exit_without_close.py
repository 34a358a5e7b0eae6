"""A client left open when the interpreter exits: the exit is quiet (nothing on stderr), a
Producer delivers what it holds (as kafka-python's atexit close does, within 5 s), a Consumer
stops without committing (as librdkafka's destructor without consumer close), an Admin just
closes. Each script runs in a real subprocess against a real broker."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from readback import consume, create_topic
from support import BrookProcess, env_with_repo

from brook import Admin


def _run(script: str, bootstrap: str, topic: str) -> subprocess.CompletedProcess[str]:
    code = (
        textwrap.dedent(script).replace("BOOTSTRAP", repr(bootstrap)).replace("TOPIC", repr(topic))
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env_with_repo(),
        timeout=120,
    )


def test_producer_left_open_delivers_and_exits_quietly(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    create_topic(brook_session.bootstrap, unique_topic)
    # linger.ms far beyond the exit: only the exit's close sends the batch.
    done = _run(
        """
        from brook import Producer
        producer = Producer({"bootstrap.servers": BOOTSTRAP, "linger.ms": 600000})
        for i in range(3):
            producer.send(TOPIC, b"record-%d" % i)
        print("sent")
        """,
        brook_session.bootstrap,
        unique_topic,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "sent\n", "")
    stored = consume(brook_session.bootstrap, unique_topic, 1, 3)
    assert [m.value() for m in stored] == [b"record-0", b"record-1", b"record-2"]


def test_consumer_left_open_exits_quietly_without_committing(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    create_topic(brook_session.bootstrap, unique_topic)
    group = f"exit-{unique_topic}"
    done = _run(
        f"""
        import time
        from brook import Consumer, Producer
        with Producer({{"bootstrap.servers": BOOTSTRAP}}) as producer:
            producer.send(TOPIC, b"one").result(30)
        consumer = Consumer({{
            "bootstrap.servers": BOOTSTRAP,
            "group.id": {group!r},
            "auto.offset.reset": "earliest",
            "auto.commit.interval.ms": 600000,
        }})
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 60
        records = []
        while not records and time.monotonic() < deadline:
            records = consumer.poll(timeout_ms=500)
        print([r.value for r in records])
        """,
        brook_session.bootstrap,
        unique_topic,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "[b'one']\n", "")
    with Admin({"bootstrap.servers": brook_session.bootstrap}) as admin:
        committed = admin.list_consumer_group_offsets(group, [(unique_topic, 0)])
    assert list(committed.values()) == [None]


def test_admin_left_open_exits_quietly(brook_session: BrookProcess, unique_topic: str) -> None:
    done = _run(
        """
        from brook import Admin
        from brook.client.admin import NewTopic
        admin = Admin({"bootstrap.servers": BOOTSTRAP})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
        print(TOPIC in admin.list_topics())
        """,
        brook_session.bootstrap,
        unique_topic,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "True\n", "")
