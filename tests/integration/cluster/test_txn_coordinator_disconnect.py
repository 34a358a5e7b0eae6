"""A transactional client that disconnects while the coordinator is writing its request
(InitProducerId waiting for acks=all because a follower of its ``__transaction_state``
partition is dead) must not leave the transactional id pending: once the follower is back,
the next InitProducerId succeeds instead of CONCURRENT_TRANSACTIONS forever (a producer killed
with SIGKILL mid-request, then restarted, is exactly this)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from loss_checker import wait_fully_replicated
from quorum_support import FAST, wait_for
from rawclient import RawClient
from support import local_cluster

from brook.client.admin import Admin
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors


def _init_producer_id(bootstrap: str, tid: str) -> tuple[int, int]:
    with RawClient(bootstrap) as client:
        resp = client.request(
            ApiKey.INIT_PRODUCER_ID,
            4,
            {
                "transactional_id": tid,
                "transaction_timeout": 10000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
    return int(resp.error_code), int(resp.producer_epoch)


def _coordinator(bootstrap: str, tid: str) -> int | None:
    with RawClient(bootstrap) as client:
        resp = client.request(
            ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]}
        )
    (found,) = resp.coordinators
    return int(found.node_id) if int(found.error_code) == Errors.NONE else None


def test_a_client_gone_mid_write_does_not_leave_its_id_pending(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        tid = f"gone-{uuid.uuid4().hex[:8]}"
        first = cluster.bootstrap_servers.split(",")[0]
        coordinator = wait_for("a coordinator", lambda: _coordinator(first, tid))
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            wait_fully_replicated(admin, "__transaction_state")
        address = cluster.node(coordinator).broker_address
        assert _init_producer_id(address, tid) == (Errors.NONE, 0)

        follower = next(n for n in (1, 2, 3) if n != coordinator)
        cluster.kill(follower)  # the next write waits for it (acks=all)
        with RawClient(address) as client:
            client.request(
                ApiKey.INIT_PRODUCER_ID,
                4,
                {
                    "transactional_id": tid,
                    "transaction_timeout": 10000,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
                expect_response=False,
            )
            # Gone in the middle of the coordinator's write (it waits up to 5 s for acks).
            time.sleep(1.0)
        cluster.restart(follower)

        codes: list[int] = []

        def initialized() -> bool:
            code, _ = _init_producer_id(address, tid)
            codes.append(code)
            return code == Errors.NONE

        try:
            wait_for("InitProducerId to succeed", initialized, timeout=60)
        except TimeoutError:
            raise AssertionError(
                f"InitProducerId still refused: last answers {codes[-5:]}"
            ) from None
