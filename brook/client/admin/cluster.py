"""The admin client's view of the cluster: its id, controller and brokers (DescribeCluster, or
Metadata on brokers without it)."""

from __future__ import annotations

from brook.protocol.api import ApiKey
from brook.protocol.errors import KafkaError

from ..cluster import BrokerNode
from .core import AdminCore
from .types import ClusterDescription

__all__ = ["describe_cluster"]


async def describe_cluster(core: AdminCore, *, timeout_ms: int | None = None) -> ClusterDescription:
    """Cluster id, controller and brokers (DescribeCluster when the broker has it, else
    Metadata)."""
    deadline = core.deadline(timeout_ms)

    async def attempt() -> ClusterDescription:
        conn = await core.network.any_connection()
        if conn.supports(ApiKey.DESCRIBE_CLUSTER):
            data = {
                "include_cluster_authorized_operations": False,
                "endpoint_type": 1,
                "include_fenced_brokers": False,
            }
            resp = await conn.send(ApiKey.DESCRIBE_CLUSTER, data)
            code = int(resp.error_code)
            if code:
                raise KafkaError(code, resp.error_message)
            brokers = tuple(
                BrokerNode(int(b.broker_id), b.host, int(b.port), b.rack) for b in resp.brokers
            )
            return ClusterDescription(resp.cluster_id, int(resp.controller_id), brokers)
        resp = await core.network.fetch_metadata([])
        brokers = tuple(
            BrokerNode(int(b.node_id), b.host, int(b.port), b.rack) for b in resp.brokers
        )
        return ClusterDescription(
            getattr(resp, "cluster_id", None), int(resp.controller_id), brokers
        )

    result = await core.call(attempt, deadline)
    return ClusterDescription(
        result.cluster_id,
        result.controller_id,
        tuple(sorted(result.brokers, key=lambda b: b.node_id)),
    )
