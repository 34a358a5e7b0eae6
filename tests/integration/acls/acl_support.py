"""A broker with Kafka's StandardAuthorizer on and two listeners, one per principal.

Until SASL authenticates connections, ``brook.test.listener.principals`` names who each
listener's connections are: ADMIN (a super user) and ALICE (only what ACLs allow her).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rawclient import RawClient
from support import BrookProcess

from brook.protocol.api import ApiKey


@dataclass
class Secured:
    broker: BrookProcess
    admin: str  # bootstrap of the super user's listener
    alice: str  # bootstrap of User:alice's listener


def secured_overrides(admin_port: int, alice_port: int) -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{admin_port},ALICE://127.0.0.1:{alice_port}",
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,ALICE:PLAINTEXT,CONTROLLER:PLAINTEXT"
        ),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "brook.test.listener.principals": "PLAINTEXT=User:admin,ALICE=User:alice",
        "group.initial.rebalance.delay.ms": "0",
    }


def wait_for_coordinator(admin: RawClient, group: str) -> None:
    """The group's coordinator is up (the offsets topic is created on first use)."""
    deadline = time.monotonic() + 30
    request = {"key_type": 0, "coordinator_keys": [group]}
    while admin.request(ApiKey.FIND_COORDINATOR, 4, request).coordinators[0].error_code:
        assert time.monotonic() < deadline, "no group coordinator within 30 s"
        time.sleep(0.1)
