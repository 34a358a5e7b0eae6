"""``ControllerApi`` over the network, and the router that picks this node's own controller
or the remote one.

``RemoteController`` sends each operation as its Kafka RPC to the active controller's
controller listener (the request and result conversions live in the handler module of each
API, beside the code that serves it), retrying on NOT_CONTROLLER or an unreachable node until
its timeout.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from brook.metadata.acl_control import AclDeletion, AclOutcome
from brook.metadata.controller import ConfigOp, CreatedTopic, CreateTopicSpec, Outcome
from brook.metadata.controller_api import (
    BrokerHeartbeat,
    BrokerRegistration,
    Committed,
    ControllerError,
    HeartbeatReply,
    IsrChange,
    IsrChangeResult,
    PartitionResult,
    ProducerIdBlock,
    Reassignment,
    TopicResult,
)
from brook.metadata.quorum_controller import QuorumController
from brook.metadata.scram_control import ScramDeletion, ScramUpsertion, UserResult
from brook.net.connection import NodeChannels, NodeUnavailable
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclBinding, AclBindingFilter

from .handlers import (
    allocate_producer_ids,
    alter_configs,
    alter_partition,
    alter_partition_reassignments,
    alter_user_scram_credentials,
    broker_heartbeat,
    broker_registration,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_topics,
    describe_quorum,
    elect_leaders,
    incremental_alter_configs,
    list_partition_reassignments,
)

T = TypeVar("T")


class RemoteController:
    """``ControllerApi`` over the controller listener: each call is the Kafka RPC sent to the
    active controller (the quorum leader this node knows), retried on another leader when the
    one asked says NOT_CONTROLLER or cannot be reached, until ``timeout_ms``. A mutating call
    then asks the controller for its high watermark (DescribeQuorum), so the caller can wait
    for its own image to reach what was committed."""

    def __init__(
        self,
        node_id: int,
        voters: Mapping[int, tuple[str, int]],
        leader: Callable[[], int | None],
        timeout_ms: int,
        retry_backoff_ms: int = 50,
    ) -> None:
        self.voters = dict(voters)
        self.leader = leader
        self.timeout_s = timeout_ms / 1000
        self.backoff_s = retry_backoff_ms / 1000
        self.channels = NodeChannels(f"brook-node-{node_id}")
        self._last_asked: int | None = None

    def close(self) -> None:
        self.channels.close()

    async def _send(
        self, api_key: ApiKey, version: int, request: dict[str, Any], refused: Callable[[Any], bool]
    ) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        last = "no controller is known"
        while loop.time() < deadline:
            target = self.leader()
            if target is None or target not in self.voters:
                # no leader known yet: try the voters in turn
                ids = sorted(self.voters)
                target = (
                    ids[(ids.index(self._last_asked) + 1) % len(ids)]
                    if (self._last_asked in ids)
                    else ids[0]
                )
            self._last_asked = target
            host, port = self.voters[target]
            conn = self.channels.get(target, host, port)
            remaining = max(0.05, deadline - loop.time())
            try:
                response = await conn.send(api_key, version, request, min(remaining, 5.0))
            except (NodeUnavailable, TimeoutError) as exc:
                last = f"controller {target} at {host}:{port}: {exc}"
            else:
                if not refused(response):
                    return response
                last = f"node {target} is not the active controller"
            await asyncio.sleep(self.backoff_s)
        raise ControllerError(Errors.REQUEST_TIMED_OUT, f"no active controller answered: {last}")

    async def _committed(self, value: T) -> Committed[T]:
        response = await self._send(
            ApiKey.DESCRIBE_QUORUM,
            describe_quorum.REMOTE_VERSION,
            describe_quorum.request_of(),
            _top_level_refused,
        )
        hw = describe_quorum.high_watermark_of(response)
        return Committed(value, hw - 1)

    async def create_topics(
        self, specs: Sequence[CreateTopicSpec], validate_only: bool
    ) -> Committed[list[CreatedTopic]]:
        request = create_topics.request_of(list(specs), validate_only, self._timeout_ms())
        response = await self._send(
            ApiKey.CREATE_TOPICS,
            create_topics.REMOTE_VERSION,
            request,
            lambda r: _all_refused(t.error_code for t in r.topics),
        )
        return await self._committed(create_topics.results_of(response))

    async def delete_topics(
        self, names: Sequence[str | None], ids: Sequence[uuid.UUID | None]
    ) -> Committed[list[TopicResult]]:
        request = delete_topics.request_of(list(names), list(ids), self._timeout_ms())
        response = await self._send(
            ApiKey.DELETE_TOPICS,
            delete_topics.REMOTE_VERSION,
            request,
            lambda r: _all_refused(t.error_code for t in r.responses),
        )
        return await self._committed(delete_topics.results_of(response))

    async def create_partitions(
        self,
        requests: Sequence[tuple[str, int, list[list[int]] | None]],
        validate_only: bool,
    ) -> Committed[list[Outcome]]:
        request = create_partitions.request_of(list(requests), validate_only, self._timeout_ms())
        response = await self._send(
            ApiKey.CREATE_PARTITIONS,
            create_partitions.REMOTE_VERSION,
            request,
            lambda r: _all_refused(t.error_code for t in r.results),
        )
        return await self._committed(create_partitions.results_of(response))

    async def alter_user_scram_credentials(
        self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
    ) -> Committed[list[UserResult]]:
        response = await self._send(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            alter_user_scram_credentials.REMOTE_VERSION,
            alter_user_scram_credentials.request_of(deletions, upsertions),
            lambda r: _all_refused(x.error_code for x in r.results),
        )
        return await self._committed(alter_user_scram_credentials.results_of(response))

    async def alter_configs(
        self,
        resources: Sequence[tuple[int, str, Sequence[ConfigOp]]],
        incremental: bool,
        validate_only: bool,
    ) -> Committed[list[Outcome]]:
        items = [(t, n, list(ops)) for t, n, ops in resources]
        module = incremental_alter_configs if incremental else alter_configs
        key = ApiKey.INCREMENTAL_ALTER_CONFIGS if incremental else ApiKey.ALTER_CONFIGS
        response = await self._send(
            key,
            module.REMOTE_VERSION,
            module.request_of(items, validate_only),
            lambda r: _all_refused(x.error_code for x in r.responses),
        )
        return await self._committed(module.results_of(response))

    async def elect_leaders(
        self, election_type: int, partitions: Sequence[tuple[str, int]] | None
    ) -> Committed[list[PartitionResult]]:
        request = elect_leaders.request_of(
            election_type, None if partitions is None else list(partitions), self._timeout_ms()
        )
        response = await self._send(
            ApiKey.ELECT_LEADERS, elect_leaders.REMOTE_VERSION, request, _top_level_refused
        )
        return await self._committed(elect_leaders.results_of(response))

    async def alter_partition_reassignments(
        self, targets: Sequence[tuple[str, int, list[int] | None]]
    ) -> Committed[list[PartitionResult]]:
        request = alter_partition_reassignments.request_of(list(targets), self._timeout_ms())
        response = await self._send(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            alter_partition_reassignments.REMOTE_VERSION,
            request,
            _top_level_refused,
        )
        return await self._committed(alter_partition_reassignments.results_of(response))

    async def list_partition_reassignments(
        self, partitions: Sequence[tuple[str, int]] | None
    ) -> list[Reassignment]:
        request = list_partition_reassignments.request_of(
            None if partitions is None else list(partitions), self._timeout_ms()
        )
        response = await self._send(
            ApiKey.LIST_PARTITION_REASSIGNMENTS,
            list_partition_reassignments.REMOTE_VERSION,
            request,
            _top_level_refused,
        )
        return list_partition_reassignments.results_of(response)

    async def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int
    ) -> Committed[ProducerIdBlock]:
        response = await self._send(
            ApiKey.ALLOCATE_PRODUCER_IDS,
            allocate_producer_ids.REMOTE_VERSION,
            {"broker_id": broker_id, "broker_epoch": broker_epoch},
            _top_level_refused,
        )
        _raise_error(response)
        return Committed(
            ProducerIdBlock(broker_id, response.producer_id_start, response.producer_id_len)
        )

    async def create_acls(self, bindings: Sequence[AclBinding]) -> Committed[list[AclOutcome]]:
        response = await self._send(
            ApiKey.CREATE_ACLS,
            create_acls.REMOTE_VERSION,
            create_acls.request_of(list(bindings)),
            lambda r: _all_refused(x.error_code for x in r.results),
        )
        return await self._committed(create_acls.results_of(response))

    async def delete_acls(
        self, filters: Sequence[AclBindingFilter]
    ) -> Committed[list[AclDeletion]]:
        response = await self._send(
            ApiKey.DELETE_ACLS,
            delete_acls.REMOTE_VERSION,
            delete_acls.request_of(list(filters)),
            lambda r: _all_refused(x.error_code for x in r.filter_results),
        )
        return await self._committed(delete_acls.results_of(response))

    async def register_broker(self, registration: BrokerRegistration) -> Committed[int]:
        response = await self._send(
            ApiKey.BROKER_REGISTRATION,
            broker_registration.REMOTE_VERSION,
            broker_registration.request_of(registration),
            _top_level_refused,
        )
        _raise_error(response)
        return Committed(response.broker_epoch)

    async def broker_heartbeat(self, heartbeat: BrokerHeartbeat) -> HeartbeatReply:
        response = await self._send(
            ApiKey.BROKER_HEARTBEAT,
            broker_heartbeat.REMOTE_VERSION,
            broker_heartbeat.request_of(heartbeat),
            _top_level_refused,
        )
        _raise_error(response)
        return HeartbeatReply(response.is_caught_up, response.is_fenced, response.should_shut_down)

    async def alter_partition(
        self, broker_id: int, broker_epoch: int, changes: Sequence[IsrChange]
    ) -> Committed[list[IsrChangeResult]]:
        response = await self._send(
            ApiKey.ALTER_PARTITION,
            alter_partition.REMOTE_VERSION,
            alter_partition.request_of(broker_id, broker_epoch, list(changes)),
            _top_level_refused,
        )
        _raise_error(response)
        return Committed(alter_partition.results_of(response))

    async def forward(self, api_key: ApiKey, version: int, request: Any) -> Any:
        """Send a request as it came (DescribeQuorum) to the active controller."""
        return await self._send(api_key, version, request, _top_level_refused)

    def _timeout_ms(self) -> int:
        return int(self.timeout_s * 1000)


def _all_refused(codes: Iterable[int]) -> bool:
    codes = list(codes)
    return bool(codes) and all(c == Errors.NOT_CONTROLLER for c in codes)


def _top_level_refused(response: Any) -> bool:
    return getattr(response, "error_code", Errors.NONE) == Errors.NOT_CONTROLLER


def _raise_error(response: Any) -> None:
    if response.error_code != Errors.NONE:
        raise ControllerError(response.error_code, getattr(response, "error_message", None))


class ControllerRouter:
    """The broker's ``ControllerApi``: this node's own controller while it is the active one
    (no network hop on a combined node), the remote active controller otherwise."""

    def __init__(self, local: QuorumController | None, remote: RemoteController | None) -> None:
        self.local = local
        self.remote = remote

    def _target(self) -> Any:
        if self.local is not None and (self.local.active or self.remote is None):
            return self.local
        assert self.remote is not None
        return self.remote

    async def _call(self, name: str, *args: Any) -> Any:
        target = self._target()
        try:
            return await getattr(target, name)(*args)
        except ControllerError as exc:
            if (
                target is self.local
                and self.remote is not None
                and (exc.error_code == Errors.NOT_CONTROLLER)
            ):
                return await getattr(self.remote, name)(*args)
            raise

    async def create_topics(self, *args: Any) -> Any:
        return await self._call("create_topics", *args)

    async def delete_topics(self, *args: Any) -> Any:
        return await self._call("delete_topics", *args)

    async def create_partitions(self, *args: Any) -> Any:
        return await self._call("create_partitions", *args)

    async def alter_configs(self, *args: Any) -> Any:
        return await self._call("alter_configs", *args)

    async def alter_user_scram_credentials(self, *args: Any) -> Any:
        return await self._call("alter_user_scram_credentials", *args)

    async def elect_leaders(self, *args: Any) -> Any:
        return await self._call("elect_leaders", *args)

    async def alter_partition_reassignments(self, *args: Any) -> Any:
        return await self._call("alter_partition_reassignments", *args)

    async def list_partition_reassignments(self, *args: Any) -> Any:
        return await self._call("list_partition_reassignments", *args)

    async def allocate_producer_ids(self, *args: Any) -> Any:
        return await self._call("allocate_producer_ids", *args)

    async def create_acls(self, *args: Any) -> Any:
        return await self._call("create_acls", *args)

    async def delete_acls(self, *args: Any) -> Any:
        return await self._call("delete_acls", *args)

    async def register_broker(self, *args: Any) -> Any:
        return await self._call("register_broker", *args)

    async def broker_heartbeat(self, *args: Any) -> Any:
        return await self._call("broker_heartbeat", *args)

    async def alter_partition(self, *args: Any) -> Any:
        return await self._call("alter_partition", *args)
