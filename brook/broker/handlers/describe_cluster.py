"""DescribeCluster (60), v0-2: the brokers on the request's listener (v2 can include fenced
ones), the cluster id and the active controller. Only broker endpoints are served
(endpoint_type 1); asking for controller endpoints gets UNSUPPORTED_ENDPOINT_TYPE.

Authorized operations, when asked, are what the authorizer allows on the cluster (0 without
DESCRIBE on it, as Kafka).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from .. import authz
from ..registry import RequestContext, handler
from .common import INT32_MIN

UNSUPPORTED_ENDPOINT_TYPE = 114
BROKERS = 1


@handler(ApiKey.DESCRIBE_CLUSTER, (0, 2))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    image = broker.image
    endpoint_type = getattr(request, "endpoint_type", BROKERS)
    response: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "error_message": None,
        "endpoint_type": endpoint_type,
        "cluster_id": broker.cluster_id,
        "controller_id": broker.controller_id_for_clients(),
        "brokers": [],
        "cluster_authorized_operations": (
            authz.cluster_operations(ctx)
            if request.include_cluster_authorized_operations
            else INT32_MIN
        ),
    }
    if endpoint_type != BROKERS:
        response["error_code"] = UNSUPPORTED_ENDPOINT_TYPE
        response["error_message"] = "Only broker endpoints are served"
        return response
    include_fenced = bool(getattr(request, "include_fenced_brokers", False))
    for info in sorted(image.brokers.values(), key=lambda b: b.broker_id):
        if info.fenced and not include_fenced:
            continue
        ep = info.endpoint(ctx.listener)
        if ep is not None:
            response["brokers"].append(
                {
                    "broker_id": info.broker_id,
                    "host": ep.host,
                    "port": ep.port,
                    "rack": info.rack,
                    "is_fenced": info.fenced,
                }
            )
    return response
