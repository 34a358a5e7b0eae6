"""``brook acls`` end to end: ACLs added, listed and removed with kafka-acls.sh's flags, and
what they allow checked with real clients (confluent-kafka) as User:alice."""

from __future__ import annotations

import io
import time
import uuid

import pytest
from acl_support import Secured
from confluent_kafka import Consumer, KafkaError, Producer
from rawclient import RawClient, create_topic

from brook.cli.main import main


def _tool(capsys: pytest.CaptureFixture[str], bootstrap: str, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    try:
        code = main(["acls", "--bootstrap-server", bootstrap, *args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


def _produce(bootstrap: str, topic: str) -> KafkaError | None:
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000})
    errors: list[KafkaError | None] = []
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(15)
    assert len(errors) == 1
    return errors[0]


def _consume_one(bootstrap: str, topic: str, group: str) -> tuple[bytes | None, KafkaError | None]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                return None, msg.error()
            return msg.value(), None
        return None, None
    finally:
        consumer.close()


def test_producer_and_consumer_acls_from_the_tool_let_alice_in(
    secured: Secured, capsys: pytest.CaptureFixture[str]
) -> None:
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", "billing"
    with RawClient(secured.admin) as admin:
        create_topic(admin, topic)
    err = _produce(secured.alice, topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    code, out = _tool(
        capsys,
        secured.admin,
        "--add",
        "--allow-principal",
        "User:alice",
        "--producer",
        "--topic",
        topic,
    )
    assert code == 0, out
    assert (
        f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, "
        "patternType=LITERAL)`:" in out
    )
    assert "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" in out
    assert _produce(secured.alice, topic) is None

    value, err = _consume_one(secured.alice, topic, group)
    assert value is None and err is not None
    code, out = _tool(
        capsys,
        secured.admin,
        "--add",
        "--allow-principal",
        "User:alice",
        "--consumer",
        "--topic",
        topic,
        "--group",
        group,
    )
    assert code == 0, out
    assert _consume_one(secured.alice, topic, group) == (b"v", None)

    code, out = _tool(capsys, secured.admin, "--list", "--topic", topic)
    assert code == 0, out
    for op in ("WRITE", "CREATE", "DESCRIBE", "READ"):
        assert f"(principal=User:alice, host=*, operation={op}, permissionType=ALLOW)" in out

    code, out = _tool(capsys, secured.admin, "--remove", "--force", "--topic", topic)
    assert code == 0, out
    code, out = _tool(capsys, secured.admin, "--list", "--topic", topic)
    assert code == 0 and "principal=User:alice" not in out
    err = _produce(secured.alice, topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_prefixed_deny_and_operation_flags(
    secured: Secured, capsys: pytest.CaptureFixture[str]
) -> None:
    with RawClient(secured.admin) as admin:
        create_topic(admin, "logs-app")
        create_topic(admin, "logs-audit")
    add = ("--add", "--resource-pattern-type", "prefixed", "--topic", "logs-")
    code, out = _tool(
        capsys, secured.admin, *add, "--allow-principal", "User:alice", "--operation", "Write"
    )
    assert code == 0, out
    code, out = _tool(
        capsys,
        secured.admin,
        "--add",
        "--topic",
        "logs-audit",
        "--deny-principal",
        "User:alice",
        "--operation",
        "write",
    )
    assert code == 0, out
    assert _produce(secured.alice, "logs-app") is None
    err = _produce(secured.alice, "logs-audit")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    code, out = _tool(capsys, secured.admin, "--list", "--principal", "User:alice")
    assert code == 0 and "patternType=PREFIXED" in out and "permissionType=DENY" in out


def test_bad_flags_and_refusals_are_reported(
    secured: Secured, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _tool(capsys, secured.admin, "--add", "--topic", "t", "--allow-principal", "alice")
    assert code == 1 and "Type:name" in out
    code, out = _tool(
        capsys,
        secured.admin,
        "--add",
        "--topic",
        "t",
        "--allow-principal",
        "User:a",
        "--operation",
        "Fly",
    )
    assert code == 1 and "Invalid operation: Fly" in out
    code, out = _tool(capsys, secured.alice, "--list")
    assert code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in out


def test_remove_asks_first_unless_forced(
    secured: Secured, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = f"asked-{uuid.uuid4().hex[:6]}"
    grant = ("--allow-principal", "User:alice", "--operation", "Read", "--topic", topic)
    assert _tool(capsys, secured.admin, "--add", *grant)[0] == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    code, out = _tool(capsys, secured.admin, "--remove", *grant)
    assert code == 0 and "Are you sure you want to remove ACLs" in out
    assert "operation=READ" in _tool(capsys, secured.admin, "--list", "--topic", topic)[1]
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert _tool(capsys, secured.admin, "--remove", *grant)[0] == 0
    assert "operation=READ" not in _tool(capsys, secured.admin, "--list", "--topic", topic)[1]
