"""Host matching end to end, and the first ACLs of a node whose clients are all
User:ANONYMOUS (docs/operations.md): with allow.everyone.if.no.acl.found, an ACL allowing All
on the cluster to User:ANONYMOUS from one address leaves ACL changes to that address."""

from __future__ import annotations

import socket
from pathlib import Path

from rawclient import RawClient
from support import BrookProcess

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

OVERRIDES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}


class RawClientFrom(RawClient):
    """A raw client connecting from a given loopback address."""

    def __init__(self, bootstrap: str, source: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection(
            (host, int(port)), timeout=10, source_address=(source, 0)
        )
        self.client_id = "raw"
        self.correlation = 0


def _cluster_all(host: str) -> dict[str, object]:
    return {
        "resource_type": 4,
        "resource_name": "kafka-cluster",
        "resource_pattern_type": 3,
        "principal": "User:ANONYMOUS",
        "host": host,
        "operation": 2,
        "permission_type": 3,
    }


def _create(raw: RawClient, creation: dict[str, object]) -> int:
    answer = raw.request(ApiKey.CREATE_ACLS, 3, {"creations": [creation]})
    return int(answer.results[0].error_code)


def test_the_first_acl_leaves_acl_changes_to_the_operators_host(tmp_path: Path) -> None:
    with BrookProcess(tmp_path / "data", OVERRIDES) as broker:
        operator = RawClientFrom(broker.bootstrap, "127.0.0.1")
        other = RawClientFrom(broker.bootstrap, "127.0.0.2")
        with operator, other:
            assert _create(operator, _cluster_all("127.0.0.1")) == Errors.NONE
            assert _create(other, _cluster_all("127.0.0.2")) == Errors.CLUSTER_AUTHORIZATION_FAILED
            assert _create(operator, _cluster_all("127.0.0.3")) == Errors.NONE
