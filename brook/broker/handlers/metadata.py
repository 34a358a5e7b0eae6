"""Metadata (3), v0-13: brokers on the request's listener, topics, partitions, topic ids.

Unknown topics are created when the request allows it (v4+, always for v0-3) and
``auto.create.topics.enable`` is on; the creation completes before the answer, so the client
sees the new topic at once instead of LEADER_NOT_AVAILABLE retries. v0 reads an empty topic
list as "all topics"; v1+ uses null for that; v13's top-level error code is always NONE.

With an authorizer, as Kafka: a topic the caller may not DESCRIBE is left out of an all-topics
answer and answered TOPIC_AUTHORIZATION_FAILED when named (whether or not it exists, so its
existence does not leak); a missing topic is auto-created only with CREATE on the cluster or
on the topic (else TOPIC_AUTHORIZATION_FAILED). Authorized operations, when asked, are what
the authorizer allows (all of them without one).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from brook.metadata.topics import is_internal, topic_name_error
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler
from .common import INT32_MIN, auto_create_topics

if TYPE_CHECKING:
    from ..server import Broker

ZERO_UUID = uuid.UUID(int=0)
TOPIC = ResourceType.TOPIC
DESCRIBE = AclOperation.DESCRIBE


@handler(ApiKey.METADATA, (0, 13))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any] | Awaitable[dict[str, Any]]:
    broker = ctx.broker
    topics = request.topics
    if ctx.api_version == 0 and not topics:
        topics = None
    if (
        topics is not None
        and 10 <= ctx.api_version < 12
        and any(t.name is None or t.topic_id not in (None, ZERO_UUID) for t in topics)
    ):
        return _invalid_request(ctx, topics)
    denied: set[str] = set()
    if topics is not None:
        named = {_name_of(broker, t) for t in topics} - {None}
        denied = named - authz.allowed_names(ctx, DESCRIBE, TOPIC, named)  # type: ignore[arg-type]
    allow_create = ctx.api_version < 4 or bool(request.allow_auto_topic_creation)
    if topics is not None and allow_create and broker.config["auto.create.topics.enable"]:
        missing = [
            t.name
            for t in topics
            if t.name
            and t.name not in denied
            and t.name not in broker.image.topics
            and topic_name_error(t.name) is None
            and not is_internal(t.name)
        ]
        if missing and not authz.authorize_cluster(ctx, AclOperation.CREATE):
            creatable = authz.allowed_names(ctx, AclOperation.CREATE, TOPIC, missing)
            denied |= set(missing) - creatable
            missing = [name for name in missing if name in creatable]
        if missing:
            return _after_creating(ctx, request, topics, missing, denied)
    return _response(ctx, request, topics, denied)


def _name_of(broker: Broker, topic: Any) -> str | None:
    """The name a requested topic is authorized by (looked up when asked by id)."""
    if topic.name:
        return str(topic.name)
    topic_id = getattr(topic, "topic_id", None)
    info = broker.image.topics_by_id.get(topic_id) if topic_id else None
    return None if info is None else info.name


def _invalid_request(ctx: RequestContext, topics: Any) -> dict[str, Any]:
    """v10-11 carry topic ids but cannot look topics up by them: Kafka refuses a null name or
    a topic id there with INVALID_REQUEST on every topic (MetadataRequest.getErrorResponse,
    which names a null topic "")."""
    return {
        "throttle_time": 0,
        "brokers": (),
        "cluster_id": None,
        "controller_id": -1,
        "topics": [
            {
                "error_code": Errors.INVALID_REQUEST,
                "name": t.name or "",
                "topic_id": t.topic_id or ZERO_UUID,
                "is_internal": False,
                "partitions": (),
                "topic_authorized_operations": INT32_MIN,
            }
            for t in topics
        ],
        "cluster_authorized_operations": INT32_MIN,
        "error_code": Errors.NONE,
    }


async def _after_creating(
    ctx: RequestContext, request: Any, topics: Any, missing: list[str], denied: set[str]
) -> dict[str, Any]:
    await auto_create_topics(ctx.broker, missing)
    return _response(ctx, request, topics, denied)


def _response(ctx: RequestContext, request: Any, topics: Any, denied: set[str]) -> dict[str, Any]:
    broker = ctx.broker
    image = broker.image
    wants_topic_ops = bool(getattr(request, "include_topic_authorized_operations", False))
    wants_cluster_ops = bool(getattr(request, "include_cluster_authorized_operations", False))
    if topics is None:
        visible = authz.allowed_names(ctx, DESCRIBE, TOPIC, image.topics)
        entries = [_topic(broker, ctx, name, None, wants_topic_ops) for name in sorted(visible)]
    else:
        entries = []
        for t in topics:
            topic_id = getattr(t, "topic_id", None)
            if _name_of(broker, t) in denied:
                entries.append(_denied(t.name, topic_id))
            else:
                entries.append(_topic(broker, ctx, t.name, topic_id, wants_topic_ops))
    brokers = []
    for info in image.live_brokers():
        ep = info.endpoint(ctx.listener)
        if ep is not None:
            brokers.append(
                {"node_id": info.broker_id, "host": ep.host, "port": ep.port, "rack": info.rack}
            )
    return {
        "throttle_time": 0,
        "brokers": brokers,
        "cluster_id": broker.cluster_id,
        "controller_id": broker.controller_id_for_clients(),
        "topics": entries,
        "cluster_authorized_operations": (
            authz.cluster_operations(ctx) if wants_cluster_ops else INT32_MIN
        ),
        "error_code": Errors.NONE,
    }


def _denied(name: str | None, topic_id: uuid.UUID | None) -> dict[str, Any]:
    """A topic the caller may not describe: nothing about it but the refusal."""
    return {
        "error_code": Errors.TOPIC_AUTHORIZATION_FAILED,
        "name": name,
        "topic_id": topic_id or ZERO_UUID,
        "is_internal": False,
        "partitions": (),
        "topic_authorized_operations": INT32_MIN,
    }


def _topic(
    broker: Broker,
    ctx: RequestContext,
    name: str | None,
    topic_id: uuid.UUID | None,
    wants_ops: bool,
) -> dict[str, Any]:
    image = broker.image
    info = None
    if name:
        info = image.topics.get(name)
    elif topic_id is not None and topic_id != ZERO_UUID:
        info = image.topics_by_id.get(topic_id)
    entry: dict[str, Any] = {
        "name": name,
        "topic_id": topic_id or ZERO_UUID,
        # Kafka flags a name it does not host by the name alone (Topic.isInternal).
        "is_internal": is_internal(name),
        "partitions": (),
        # Kafka reports them for every topic the caller may describe, found or not
        "topic_authorized_operations": (
            authz.authorized_operations(ctx, TOPIC, info.name if info else name)
            if wants_ops and (info is not None or name)
            else INT32_MIN
        ),
    }
    if info is None:
        if name:
            problem = topic_name_error(name)
            entry["error_code"] = (
                Errors.INVALID_TOPIC_EXCEPTION if problem else Errors.UNKNOWN_TOPIC_OR_PARTITION
            )
        else:
            entry["error_code"] = Errors.UNKNOWN_TOPIC_ID
        return entry
    alive = {b.broker_id for b in image.live_brokers()}
    partitions = []
    for index in sorted(info.partitions):
        p = info.partitions[index]
        leader_ok = p.leader in alive and image.alive_endpoint(p.leader, ctx.listener) is not None
        partitions.append(
            {
                "error_code": Errors.NONE if leader_ok else Errors.LEADER_NOT_AVAILABLE,
                "partition_index": index,
                "leader_id": p.leader if leader_ok else -1,
                "leader_epoch": p.leader_epoch,
                "replica_nodes": p.replicas,
                "isr_nodes": p.isr,
                "offline_replicas": tuple(r for r in p.replicas if r not in alive),
            }
        )
    entry.update(
        error_code=Errors.NONE,
        name=info.name,
        topic_id=info.topic_id,
        is_internal=is_internal(info.name),
        partitions=partitions,
    )
    return entry
