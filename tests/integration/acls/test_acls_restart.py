"""ACLs are metadata: after kill -9 and a restart every acknowledged ACL change is still in
force (from the metadata log and its snapshots), the removed ones included."""

from __future__ import annotations

from acl_support import Secured
from rawclient import RawClient, create_topic
from support import wait_for_port

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors


def _creation(name: str, op: int, permission: int = 3) -> dict[str, object]:
    return {
        "resource_type": 2,
        "resource_name": name,
        "resource_pattern_type": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": op,
        "permission_type": permission,
    }


def _describe(raw: RawClient, topic: str) -> int:
    request = {
        "topics": [{"name": topic, "topic_id": None}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    return int(raw.request(ApiKey.METADATA, 12, request).topics[0].error_code)


def test_acls_survive_kill_9(secured: Secured) -> None:
    with RawClient(secured.admin) as admin:
        for topic in ("kept", "removed"):
            create_topic(admin, topic)
        creations = [_creation("kept", 8), _creation("removed", 8)]
        answer = admin.request(ApiKey.CREATE_ACLS, 3, {"creations": creations})
        assert [r.error_code for r in answer.results] == [0, 0]
        removal = {
            "resource_type_filter": 2,
            "resource_name_filter": "removed",
            "pattern_type_filter": 3,
            "principal_filter": None,
            "host_filter": None,
            "operation": 1,
            "permission_type": 1,
        }
        deleted = admin.request(ApiKey.DELETE_ACLS, 3, {"filters": [removal]})
        assert len(deleted.filter_results[0].matching_acls) == 1
    with RawClient(secured.alice) as alice:
        assert (_describe(alice, "kept"), _describe(alice, "removed")) == (
            Errors.NONE,
            Errors.TOPIC_AUTHORIZATION_FAILED,
        )

    secured.broker.restart(clean=False)  # kill -9, then start on the same data
    wait_for_port(int(secured.alice.rsplit(":", 1)[1]))

    with RawClient(secured.alice) as alice:
        assert (_describe(alice, "kept"), _describe(alice, "removed")) == (
            Errors.NONE,
            Errors.TOPIC_AUTHORIZATION_FAILED,
        )
