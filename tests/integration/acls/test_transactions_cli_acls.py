"""``brook transactions`` as User:alice on a broker with the authorizer on: what she may not
see is left out of ``list`` or refused with an error naming the id, topic or permission; what
an ACL grants her works."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from acl_support import Secured, secured_overrides
from rawclient import RawClient, create_topic
from support import BrookProcess, free_port
from txn_support import UNVERIFIED, TxnProducer

from brook.cli.main import main
from brook.protocol.api import ApiKey

TOPIC, CLUSTER, TXN = 2, 4, 5
READ, DESCRIBE, CLUSTER_ACTION = 3, 8, 9


def _tool(capsys: pytest.CaptureFixture[str], bootstrap: str, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(["transactions", "--bootstrap-server", bootstrap, *args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _allow(admin: RawClient, rtype: int, name: str, op: int) -> None:
    creation = {
        "resource_type": rtype,
        "resource_name": name,
        "resource_pattern_type": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": op,
        "permission_type": 3,
    }
    created = admin.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation]})
    assert created.results[0].error_code == 0


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[Secured]:
    """The authorizer on, and KIP-890's verification off: the hanging transaction is a raw
    batch no coordinator knows of."""
    admin_port, alice_port = free_port(), free_port()
    overrides = {**secured_overrides(admin_port, alice_port), **UNVERIFIED}
    with BrookProcess(tmp_path / "data", overrides, port=admin_port) as broker:
        yield Secured(broker, f"127.0.0.1:{admin_port}", f"127.0.0.1:{alice_port}")


def test_alice_sees_and_changes_only_what_acls_allow(
    secured: Secured, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = f"acl-tx-{uuid.uuid4().hex[:6]}"
    with RawClient(secured.admin) as admin:
        create_topic(admin, topic)
        hanging = TxnProducer(admin, topic)
        assert hanging.send(b"stuck") == (0, 0)

    code, out, err = _tool(capsys, secured.alice, "describe", "--transactional-id", "secret-tx")
    assert (code, out) == (1, "")
    assert err.startswith("Failed to describe transaction state of transactional-id `secret-tx`")
    assert "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in err and "`secret-tx`" in err

    args = ("describe-producers", "--topic", topic, "--partition", "0")
    code, out, err = _tool(capsys, secured.alice, *args)
    assert (code, out) == (1, "")
    assert "TOPIC_AUTHORIZATION_FAILED" in err
    assert f"authorization failure on topic `{topic}`" in err
    with RawClient(secured.admin) as admin:
        _allow(admin, TOPIC, topic, READ)  # READ implies DESCRIBE (metadata)
    code, out, err = _tool(capsys, secured.alice, *args)
    assert (code, err) == (0, "")
    assert out.split("\n")[1].split("\t")[0].strip() == str(hanging.pid)

    abort = (
        "abort",
        "--topic",
        topic,
        "--partition",
        "0",
        *("--producer-id", str(hanging.pid), "--producer-epoch", str(hanging.epoch)),
        *("--coordinator-epoch", "0"),
    )
    code, out, err = _tool(capsys, secured.alice, *abort)
    assert (code, out) == (1, "")
    assert "CLUSTER_AUTHORIZATION_FAILED" in err and "cluster authorization error" in err
    with RawClient(secured.admin) as admin:
        _allow(admin, CLUSTER, "kafka-cluster", CLUSTER_ACTION)
    assert _tool(capsys, secured.alice, *abort) == (0, "", "")
    code, out, err = _tool(capsys, secured.alice, *args)
    assert (code, err) == (0, "") and out.split("\n")[1].split("\t")[5].strip() == "None"


def test_list_leaves_out_what_alice_may_not_describe(
    secured: Secured, capsys: pytest.CaptureFixture[str]
) -> None:
    with RawClient(secured.admin) as admin:
        for tid in ("mine-tx", "other-tx"):
            _init(admin, tid)
        _allow(admin, TXN, "mine-tx", DESCRIBE)
    code, out, err = _tool(capsys, secured.admin, "list")
    assert (code, err) == (0, "")
    assert {"mine-tx", "other-tx"} <= {line.split("\t")[0].strip() for line in out.split("\n")}
    code, out, err = _tool(capsys, secured.alice, "list")
    assert (code, err) == (0, "")
    listed = [line.split("\t")[0].strip() for line in out.split("\n")[1:] if line]
    assert listed == ["mine-tx"]


def _init(admin: RawClient, tid: str) -> None:
    """InitProducerId for ``tid`` once its coordinator is loaded."""
    find = {"key_type": 1, "coordinator_keys": [tid]}
    request = {
        "transactional_id": tid,
        "transaction_timeout": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    deadline = time.monotonic() + 30
    while True:
        admin.request(ApiKey.FIND_COORDINATOR, 4, find)
        code = admin.request(ApiKey.INIT_PRODUCER_ID, 4, request).error_code
        if code == 0:
            return
        assert code in (14, 15, 16, 51), code  # loading, not available, not coordinator, concurrent
        assert time.monotonic() < deadline, code
        time.sleep(0.05)
