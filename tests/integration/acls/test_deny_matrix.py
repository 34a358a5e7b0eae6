"""The deny matrix: every API family asked by User:alice without the ACL that allows it (Kafka's
error code), then with it (success), on one broker with the authorizer on. Each family uses
its own topic and group, and removes its ACLs when done, so the rows do not interfere."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from acl_support import Secured, secured_overrides, wait_for_coordinator
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess, free_port

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch

E = Errors
# (resource type, name, pattern type) of Kafka's codes: 2 topic, 3 group, 4 cluster
TOPIC, GROUP, CLUSTER, TXN = 2, 3, 4, 5
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 10, 11, 12


@dataclass(frozen=True)
class Row:
    name: str
    acls: list[tuple[int, str, int]]  # (resource type, name, operation), allowed for alice
    ask: Callable[[RawClient, str, str], int]  # (alice, topic, group) -> error code
    denied: int
    # the answer once authorized, when it is not NONE: the API's own next check
    allowed: int = Errors.NONE


def _produce(raw: RawClient, topic: str, group: str) -> int:
    response = produce(raw, topic, 0, build_simple_batch([b"v"]))
    return response.responses[0].partition_responses[0].error_code


def _transactional_produce(raw: RawClient, topic: str, group: str) -> int:
    """WRITE on the topic is granted by the row; the transactional id is what is asked."""
    request = {
        "transactional_id": f"{group}-tx",
        "acks": -1,
        "timeout": 30000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [{"index": 0, "records": build_simple_batch([b"v"])}],
            }
        ],
    }
    response = raw.request(ApiKey.PRODUCE, 9, request)
    return response.responses[0].partition_responses[0].error_code


def _fetch(raw: RawClient, topic: str, group: str) -> int:
    return fetch(raw, topic, 0, 0).responses[0].partitions[0].error_code


def _list_offsets(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": topic,
                "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}],
            }
        ],
    }
    return raw.request(ApiKey.LIST_OFFSETS, 7, request).topics[0].partitions[0].error_code


def _metadata(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "topics": [{"name": topic, "topic_id": None}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    return raw.request(ApiKey.METADATA, 12, request).topics[0].error_code


def _offset_for_leader_epoch(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "replica_id": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
            }
        ],
    }
    response = raw.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, request)
    return response.topics[0].partitions[0].error_code


def _offset_commit(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 0,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }
    return raw.request(ApiKey.OFFSET_COMMIT, 8, request).topics[0].partitions[0].error_code


def _offset_fetch(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "groups": [{"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}],
        "require_stable": False,
    }
    answer = raw.request(ApiKey.OFFSET_FETCH, 8, request).groups[0]
    return answer.error_code or answer.topics[0].partitions[0].error_code


def _find_coordinator(raw: RawClient, topic: str, group: str) -> int:
    request = {"key_type": 0, "coordinator_keys": [group]}
    return raw.request(ApiKey.FIND_COORDINATOR, 4, request).coordinators[0].error_code


def _find_transaction_coordinator(raw: RawClient, topic: str, group: str) -> int:
    request = {"key_type": 1, "coordinator_keys": [f"{group}-tx"]}
    return raw.request(ApiKey.FIND_COORDINATOR, 4, request).coordinators[0].error_code


def _init_transactional_producer_id(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "transactional_id": f"{group}-tx",
        "transaction_timeout": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    # As a client: find the coordinator first (which creates __transaction_state), then ask
    # until its partition is loaded.
    _find_transaction_coordinator(raw, topic, group)
    retry = (E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR, E.CONCURRENT_TRANSACTIONS)
    deadline = time.monotonic() + 30
    while True:
        code = raw.request(ApiKey.INIT_PRODUCER_ID, 4, request).error_code
        if code not in retry:
            return code
        assert time.monotonic() < deadline, code
        time.sleep(0.05)


def _describe_transactions(raw: RawClient, topic: str, group: str) -> int:
    """As a client: find the coordinator (which creates __transaction_state), then ask until
    its partition is loaded; an id nobody initialised is TRANSACTIONAL_ID_NOT_FOUND."""
    _find_transaction_coordinator(raw, topic, group)
    retry = (E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE)
    request = {"transactional_ids": [f"{group}-tx"]}
    deadline = time.monotonic() + 30
    while True:
        (state,) = raw.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, request).transaction_states
        if state.error_code not in retry:
            return state.error_code
        assert time.monotonic() < deadline, state.error_code
        time.sleep(0.05)


def _list_transactions(raw: RawClient) -> set[str]:
    request = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
    response = raw.request(ApiKey.LIST_TRANSACTIONS, 1, request)
    assert response.error_code == E.NONE
    return {t.transactional_id for t in response.transaction_states}


def _describe_groups(raw: RawClient, topic: str, group: str) -> int:
    request = {"groups": [group], "include_authorized_operations": True}
    return raw.request(ApiKey.DESCRIBE_GROUPS, 5, request).groups[0].error_code


def _delete_groups(raw: RawClient, topic: str, group: str) -> int:
    response = raw.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]})
    code = response.results[0].error_code
    # an authorized delete of a group that does not exist is GROUP_ID_NOT_FOUND
    return E.NONE if code == E.GROUP_ID_NOT_FOUND else code


def _create_topics(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "topics": [
            {
                "name": topic + "-new",
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout": 30000,
        "validate_only": False,
    }
    return raw.request(ApiKey.CREATE_TOPICS, 7, request).topics[0].error_code


def _delete_topics(raw: RawClient, topic: str, group: str) -> int:
    request = {"topics": [{"name": topic, "topic_id": None}], "timeout": 30000}
    return raw.request(ApiKey.DELETE_TOPICS, 6, request).responses[0].error_code


def _create_partitions(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "topics": [{"name": topic, "count": 2, "assignments": None}],
        "timeout": 30000,
        "validate_only": False,
    }
    return raw.request(ApiKey.CREATE_PARTITIONS, 3, request).results[0].error_code


def _describe_configs(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "resources": [{"resource_type": 2, "resource_name": topic, "configuration_keys": None}],
        "include_synonyms": False,
        "include_documentation": False,
    }
    return raw.request(ApiKey.DESCRIBE_CONFIGS, 4, request).results[0].error_code


def _alter_configs(raw: RawClient, topic: str, group: str) -> int:
    config = {"name": "retention.ms", "config_operation": 0, "value": "100000"}
    request = {
        "resources": [{"resource_type": 2, "resource_name": topic, "configs": [config]}],
        "validate_only": False,
    }
    return raw.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, request).responses[0].error_code


def _broker_configs(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "resources": [{"resource_type": 4, "resource_name": "", "configuration_keys": None}],
        "include_synonyms": False,
        "include_documentation": False,
    }
    return raw.request(ApiKey.DESCRIBE_CONFIGS, 4, request).results[0].error_code


def _delete_records(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": 0}]}],
        "timeout": 30000,
    }
    return raw.request(ApiKey.DELETE_RECORDS, 2, request).topics[0].partitions[0].error_code


def _init_producer_id(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "transactional_id": None,
        "transaction_timeout": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    return raw.request(ApiKey.INIT_PRODUCER_ID, 4, request).error_code


def _elect_leaders(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "election_type": 0,
        "topic_partitions": [{"topic": topic, "partitions": [0]}],
        "timeout": 30000,
    }
    response = raw.request(ApiKey.ELECT_LEADERS, 2, request)
    if response.error_code:
        return response.error_code
    code = response.replica_election_results[0].partition_result[0].error_code
    # the preferred leader already leads: an authorized, successful answer
    return E.NONE if code == E.ELECTION_NOT_NEEDED else code


def _describe_acls(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    return raw.request(ApiKey.DESCRIBE_ACLS, 3, request).error_code


def _join_group(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "group_id": group,
        "session_timeout": 10000,
        "rebalance_timeout": 10000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
        "reason": None,
    }
    return raw.request(ApiKey.JOIN_GROUP, 9, request).error_code


def _heartbeat(raw: RawClient, topic: str, group: str) -> int:
    request = {"group_id": group, "generation_id": 1, "member_id": "m", "group_instance_id": None}
    return raw.request(ApiKey.HEARTBEAT, 4, request).error_code


def _sync_group(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "group_id": group,
        "generation_id": 1,
        "member_id": "m",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [],
    }
    return raw.request(ApiKey.SYNC_GROUP, 5, request).error_code


def _leave_group(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "group_id": group,
        "members": [{"member_id": "m", "group_instance_id": None, "reason": None}],
    }
    response = raw.request(ApiKey.LEAVE_GROUP, 5, request)
    return response.error_code or response.members[0].error_code


def _follower_fetch(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "cluster_id": None,
        "replica_id": 7,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return raw.request(ApiKey.FETCH, 12, request).responses[0].partitions[0].error_code


def _replica_offset_for_leader_epoch(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "replica_id": 7,
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
            }
        ],
    }
    response = raw.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, request)
    return response.topics[0].partitions[0].error_code


def _write_txn_markers(raw: RawClient, topic: str, group: str) -> int:
    request = {
        "markers": [
            {
                "producer_id": 12345,
                "producer_epoch": 0,
                "transaction_result": False,
                "topics": [{"name": topic, "partition_indexes": [0]}],
                "coordinator_epoch": 0,
            }
        ]
    }
    response = raw.request(ApiKey.WRITE_TXN_MARKERS, 1, request)
    return response.markers[0].topics[0].partitions[0].error_code


def _verify_partitions(raw: RawClient, topic: str, group: str) -> int:
    """AddPartitionsToTxn v4 (KIP-890, brokers' form): the top-level error."""
    request = {
        "transactions": [
            {
                "transactional_id": f"{group}-tx",
                "producer_id": 12345,
                "producer_epoch": 0,
                "verify_only": True,
                "topics": [{"name": topic, "partitions": [0]}],
            }
        ]
    }
    return raw.request(ApiKey.ADD_PARTITIONS_TO_TXN, 4, request).error_code


def _describe_producers(raw: RawClient, topic: str, group: str) -> int:
    request = {"topics": [{"name": topic, "partition_indexes": [0]}]}
    response = raw.request(ApiKey.DESCRIBE_PRODUCERS, 0, request)
    return response.topics[0].partitions[0].error_code


ROWS = [
    Row("produce", [(TOPIC, "{t}", WRITE)], _produce, E.TOPIC_AUTHORIZATION_FAILED),
    Row(
        "transactional-produce",
        [(TXN, "{g}-tx", WRITE)],
        _transactional_produce,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        allowed=E.TOPIC_AUTHORIZATION_FAILED,  # the id passes; the topic is asked next
    ),
    Row(
        "find-transaction-coordinator",
        [(TXN, "{g}-tx", DESCRIBE)],
        _find_transaction_coordinator,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ),
    Row(
        "init-transactional-producer-id",
        [(TXN, "{g}-tx", WRITE)],
        _init_transactional_producer_id,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ),
    Row(
        "describe-transactions",
        [(TXN, "{g}-tx", DESCRIBE)],
        _describe_transactions,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        allowed=E.TRANSACTIONAL_ID_NOT_FOUND,  # authorized; nobody initialised the id
    ),
    Row("fetch", [(TOPIC, "{t}", READ)], _fetch, E.TOPIC_AUTHORIZATION_FAILED),
    Row(
        "describe-producers",
        [(TOPIC, "{t}", READ)],
        _describe_producers,
        E.TOPIC_AUTHORIZATION_FAILED,
    ),
    Row("list-offsets", [(TOPIC, "{t}", DESCRIBE)], _list_offsets, E.TOPIC_AUTHORIZATION_FAILED),
    Row("metadata", [(TOPIC, "{t}", DESCRIBE)], _metadata, E.TOPIC_AUTHORIZATION_FAILED),
    Row(
        "offset-for-leader-epoch",
        [(TOPIC, "{t}", DESCRIBE)],
        _offset_for_leader_epoch,
        E.TOPIC_AUTHORIZATION_FAILED,
    ),
    Row(
        "offset-commit",
        [(GROUP, "{g}", READ), (TOPIC, "{t}", READ)],
        _offset_commit,
        E.GROUP_AUTHORIZATION_FAILED,
    ),
    Row(
        "offset-fetch",
        [(GROUP, "{g}", DESCRIBE), (TOPIC, "{t}", DESCRIBE)],
        _offset_fetch,
        E.GROUP_AUTHORIZATION_FAILED,
    ),
    Row(
        "find-coordinator",
        [(GROUP, "{g}", DESCRIBE)],
        _find_coordinator,
        E.GROUP_AUTHORIZATION_FAILED,
    ),
    Row(
        "describe-groups",
        [(GROUP, "{g}", DESCRIBE)],
        _describe_groups,
        E.GROUP_AUTHORIZATION_FAILED,
    ),
    Row("delete-groups", [(GROUP, "{g}", DELETE)], _delete_groups, E.GROUP_AUTHORIZATION_FAILED),
    Row(
        "create-topics", [(TOPIC, "{t}-new", CREATE)], _create_topics, E.TOPIC_AUTHORIZATION_FAILED
    ),
    Row("delete-topics", [(TOPIC, "{t}", DELETE)], _delete_topics, E.TOPIC_AUTHORIZATION_FAILED),
    Row(
        "create-partitions",
        [(TOPIC, "{t}", ALTER)],
        _create_partitions,
        E.TOPIC_AUTHORIZATION_FAILED,
    ),
    Row(
        "describe-configs",
        [(TOPIC, "{t}", DESCRIBE_CONFIGS)],
        _describe_configs,
        E.TOPIC_AUTHORIZATION_FAILED,
    ),
    Row(
        "alter-configs",
        [(TOPIC, "{t}", ALTER_CONFIGS)],
        _alter_configs,
        E.TOPIC_AUTHORIZATION_FAILED,
    ),
    Row(
        "broker-configs",
        [(CLUSTER, "kafka-cluster", DESCRIBE_CONFIGS)],
        _broker_configs,
        E.CLUSTER_AUTHORIZATION_FAILED,
    ),
    Row("delete-records", [(TOPIC, "{t}", DELETE)], _delete_records, E.TOPIC_AUTHORIZATION_FAILED),
    Row(
        "init-producer-id",
        [(CLUSTER, "kafka-cluster", IDEMPOTENT_WRITE)],
        _init_producer_id,
        E.CLUSTER_AUTHORIZATION_FAILED,
    ),
    Row(
        "init-producer-id-by-topic-write",
        [(TOPIC, "{t}", WRITE)],
        _init_producer_id,
        E.CLUSTER_AUTHORIZATION_FAILED,
    ),
    Row(
        "elect-leaders",
        [(CLUSTER, "kafka-cluster", ALTER)],
        _elect_leaders,
        E.CLUSTER_AUTHORIZATION_FAILED,
    ),
    Row(
        "join-group",
        [(GROUP, "{g}", READ)],
        _join_group,
        E.GROUP_AUTHORIZATION_FAILED,
        allowed=E.MEMBER_ID_REQUIRED,
    ),
    Row(
        "heartbeat",
        [(GROUP, "{g}", READ)],
        _heartbeat,
        E.GROUP_AUTHORIZATION_FAILED,
        allowed=E.UNKNOWN_MEMBER_ID,
    ),
    Row(
        "sync-group",
        [(GROUP, "{g}", READ)],
        _sync_group,
        E.GROUP_AUTHORIZATION_FAILED,
        allowed=E.UNKNOWN_MEMBER_ID,
    ),
    Row(
        "leave-group",
        [(GROUP, "{g}", READ)],
        _leave_group,
        E.GROUP_AUTHORIZATION_FAILED,
        allowed=E.UNKNOWN_MEMBER_ID,
    ),
    # a replica the partition does not have: past the authorizer, the leader's own check
    Row(
        "follower-fetch",
        [(CLUSTER, "kafka-cluster", 9)],
        _follower_fetch,
        E.TOPIC_AUTHORIZATION_FAILED,
        allowed=E.NOT_LEADER_OR_FOLLOWER,
    ),
    Row(
        "replica-offset-for-leader-epoch",
        [(CLUSTER, "kafka-cluster", 9)],
        _replica_offset_for_leader_epoch,
        E.CLUSTER_AUTHORIZATION_FAILED,
    ),
    # a transaction coordinator's markers (here: an abort of a producer with nothing open)
    Row(
        "write-txn-markers",
        [(CLUSTER, "kafka-cluster", 9)],
        _write_txn_markers,
        E.CLUSTER_AUTHORIZATION_FAILED,
    ),
    # a partition leader verifying with a transaction coordinator (KIP-890)
    Row(
        "add-partitions-to-txn-v4",
        [(CLUSTER, "kafka-cluster", 9)],
        _verify_partitions,
        E.CLUSTER_AUTHORIZATION_FAILED,
    ),
    Row(
        "describe-acls",
        [(CLUSTER, "kafka-cluster", DESCRIBE)],
        _describe_acls,
        E.CLUSTER_AUTHORIZATION_FAILED,
    ),
]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    admin_port, alice_port = free_port(), free_port()
    overrides = secured_overrides(admin_port, alice_port)
    data = tmp_path_factory.mktemp("deny-matrix") / "data"
    with BrookProcess(data, overrides, port=admin_port) as process:
        yield Secured(process, f"127.0.0.1:{admin_port}", f"127.0.0.1:{alice_port}")


def _creation(rtype: int, name: str, op: int) -> dict[str, object]:
    return {
        "resource_type": rtype,
        "resource_name": name,
        "resource_pattern_type": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": op,
        "permission_type": 3,
    }


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_denied_without_the_acl_and_allowed_with_it(broker: Secured, row: Row) -> None:
    topic, group = f"{row.name}-t", f"{row.name}-g"
    acls = [_creation(rtype, name.format(t=topic, g=group), op) for rtype, name, op in row.acls]
    with RawClient(broker.admin) as admin, RawClient(broker.alice) as alice:
        create_topic(admin, topic)
        wait_for_coordinator(admin, group)
        assert row.ask(alice, topic, group) == row.denied
        created = admin.request(ApiKey.CREATE_ACLS, 3, {"creations": acls})
        assert [r.error_code for r in created.results] == [E.NONE] * len(acls)
        try:
            assert row.ask(alice, topic, group) == row.allowed
        finally:
            # the next rows start from no ACL of alice's again
            removal = [
                {
                    "resource_type_filter": a["resource_type"],
                    "resource_name_filter": a["resource_name"],
                    "pattern_type_filter": 3,
                    "principal_filter": "User:alice",
                    "host_filter": None,
                    "operation": a["operation"],
                    "permission_type": 3,
                }
                for a in acls
            ]
            admin.request(ApiKey.DELETE_ACLS, 3, {"filters": removal})


def test_a_topic_alice_may_not_describe_does_not_leak(broker: Secured) -> None:
    """Named, it is TOPIC_AUTHORIZATION_FAILED whether it exists or not; in an all-topics
    listing it is absent; produce and fetch cannot tell it from a missing one either."""
    with RawClient(broker.admin) as admin, RawClient(broker.alice) as alice:
        create_topic(admin, "secret")
        request = {
            "topics": [{"name": "secret", "topic_id": None}, {"name": "nowhere", "topic_id": None}],
            "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": True,
        }
        answer = alice.request(ApiKey.METADATA, 12, request)
        assert [(t.name, t.error_code, t.partitions) for t in answer.topics] == [
            ("secret", E.TOPIC_AUTHORIZATION_FAILED, ()),
            ("nowhere", E.TOPIC_AUTHORIZATION_FAILED, ()),
        ]
        everything = {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        }
        listed = {t.name for t in alice.request(ApiKey.METADATA, 12, everything).topics}
        assert "secret" not in listed
        assert "secret" in {t.name for t in admin.request(ApiKey.METADATA, 12, everything).topics}
        assert _produce(alice, "nowhere", "") == _produce(alice, "secret", "")
        assert _fetch(alice, "nowhere", "") == _fetch(alice, "secret", "")
        # nothing was auto-created for alice
        assert "nowhere" not in {
            t.name for t in admin.request(ApiKey.METADATA, 12, everything).topics
        }


def _allow(admin: RawClient, rtype: int, name: str, op: int) -> None:
    created = admin.request(ApiKey.CREATE_ACLS, 3, {"creations": [_creation(rtype, name, op)]})
    assert created.results[0].error_code == E.NONE


def test_listings_leave_out_what_alice_may_not_describe(broker: Secured) -> None:
    """ListGroups without DESCRIBE on the cluster lists only groups she may describe;
    OffsetFetch of every committed offset leaves out topics she may not describe; a topic
    asked for by id in DeleteTopics that she may not describe is an unknown id."""
    with RawClient(broker.admin) as admin, RawClient(broker.alice) as alice:
        response = create_topic(admin, "listed-visible")
        create_topic(admin, "listed-hidden")
        hidden_id = next(
            t.topic_id
            for t in admin.request(
                ApiKey.METADATA,
                12,
                {
                    "topics": [{"name": "listed-hidden", "topic_id": None}],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            ).topics
        )
        assert response.topics[0].error_code == E.NONE
        for group in ("listed-mine", "listed-other"):
            wait_for_coordinator(admin, group)
            assert _offset_commit(admin, "listed-visible", group) == E.NONE
            assert _offset_commit(admin, "listed-hidden", group) == E.NONE
        _allow(admin, GROUP, "listed-mine", DESCRIBE)
        _allow(admin, TOPIC, "listed-visible", DESCRIBE)

        groups = alice.request(ApiKey.LIST_GROUPS, 4, {"states_filter": []}).groups
        assert {g.group_id for g in groups} == {"listed-mine"}
        assert {
            g.group_id for g in admin.request(ApiKey.LIST_GROUPS, 4, {"states_filter": []}).groups
        } >= {
            "listed-mine",
            "listed-other",
        }

        request = {"groups": [{"group_id": "listed-mine", "topics": None}], "require_stable": False}
        answer = alice.request(ApiKey.OFFSET_FETCH, 8, request).groups[0]
        assert answer.error_code == E.NONE
        assert [t.name for t in answer.topics] == ["listed-visible"]

        delete = {"topics": [{"name": None, "topic_id": hidden_id}], "timeout": 30000}
        result = alice.request(ApiKey.DELETE_TOPICS, 6, delete).responses[0]
        assert (result.error_code, result.name) == (E.UNKNOWN_TOPIC_ID, None)


def test_list_transactions_lists_only_ids_alice_may_describe(broker: Secured) -> None:
    """ListTransactions has no error of its own for authorization: as Kafka's, it leaves out
    the transactional ids the caller may not DESCRIBE."""
    with RawClient(broker.admin) as admin, RawClient(broker.alice) as alice:
        for group in ("listed-txn-mine", "listed-txn-other"):
            assert _init_transactional_producer_id(admin, "", group) == E.NONE
        ours = {"listed-txn-mine-tx", "listed-txn-other-tx"}
        assert _list_transactions(admin) >= ours
        assert not _list_transactions(alice) & ours
        _allow(admin, TXN, "listed-txn-mine-tx", DESCRIBE)
        assert _list_transactions(alice) & ours == {"listed-txn-mine-tx"}
