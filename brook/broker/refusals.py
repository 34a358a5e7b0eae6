"""The answer to a request refused as a whole before its handler runs, shaped as Kafka's
``AbstractRequest.getErrorResponse`` shapes it: the error at the top of the response where
the API has a top-level error code, else on every item the request named (every topic,
creation, filter, resource).

Used for the controller listener's CLUSTER_ACTION rule (``authz.controller_listener_refusal``),
whose APIs are the only ones refused this way.
"""

from __future__ import annotations

import uuid
from typing import Any

from brook.protocol.api import ApiKey

ZERO_UUID = uuid.UUID(int=0)


def _items(api_key: int, version: int, request: Any, code: int, message: str) -> dict[str, Any]:
    """The per-item part of APIs without a top-level error code."""
    err = {"error_code": code, "error_message": message}
    if api_key == ApiKey.CREATE_TOPICS:
        topics = [
            {
                "name": t.name,
                "topic_id": ZERO_UUID,
                "num_partitions": -1,
                "replication_factor": -1,
                "configs": None,
                "topic_config_error_code": 0,
                **err,
            }
            for t in request.topics
        ]
        return {"topics": topics}
    if api_key == ApiKey.DELETE_TOPICS:
        if version >= 6:
            named = [(t.name, t.topic_id or ZERO_UUID) for t in request.topics]
        else:
            named = [(name, ZERO_UUID) for name in request.topic_names]
        return {"responses": [{"name": n, "topic_id": i, **err} for n, i in named]}
    if api_key == ApiKey.CREATE_ACLS:
        return {"results": [dict(err) for _ in request.creations]}
    if api_key == ApiKey.DELETE_ACLS:
        return {"filter_results": [{"matching_acls": [], **err} for _ in request.filters]}
    if api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        resources = [
            {"resource_type": r.resource_type, "resource_name": r.resource_name, **err}
            for r in request.resources
        ]
        return {"responses": resources}
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        users = dict.fromkeys(
            [d.name for d in request.deletions] + [u.name for u in request.upsertions]
        )
        return {"results": [{"user": user, **err} for user in users]}
    if api_key == ApiKey.CREATE_PARTITIONS:
        return {"results": [{"name": t.name, **err} for t in request.topics]}
    if api_key == ApiKey.ELECT_LEADERS and version == 0:
        results = [
            {
                "topic": t.topic,
                "partition_result": [{"partition_id": p, **err} for p in t.partitions],
            }
            for t in request.topic_partitions or ()
        ]
        return {"replica_election_results": results}
    return {}


def refusal_response(
    api_key: int, version: int, request: Any, code: int, message: str
) -> dict[str, Any]:
    """A whole-request refusal for any API of the controller listener (fields a version
    lacks are dropped when the response is built)."""
    response: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": code,
        "error_message": message,
        # empty bodies of the APIs that carry a top-level error code
        "topics": [],
        "responses": [],
        "nodes": [],
        "replica_election_results": [],
        "allow_replication_factor_change": True,
        "should_shut_down": False,
        "producer_id_start": -1,
        "producer_id_len": 0,
    }
    response.update(_items(api_key, version, request, code, message))
    return response
