"""The Raft RPCs of the metadata quorum, controller listener only (KIP-595, KIP-996, KIP-630):
Vote (52) v0-2 (v2 carries PreVote), BeginQuorumEpoch (53) v0-1, EndQuorumEpoch (54) v0-1,
Fetch (1) v13-17 of ``__cluster_metadata-0`` (by its fixed topic id) and FetchSnapshot (59)
v0-1. Each is handed to this node's Raft client and answered with what its core decides (a
Fetch with nothing new waits up to its MaxWaitMs). A request naming another partition gets
INVALID_REQUEST; a node that is not a quorum member (or has stopped) BROKER_NOT_AVAILABLE.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.raft.messages import Errors, TopLevelError
from brook.raft.wire import WrongPartition, decode_request, encode_response

from ..registry import CONTROLLER, RequestContext, handler


async def _serve(ctx: RequestContext, request: Any, sender_of: Any) -> dict[str, Any]:
    raft = ctx.broker.raft
    if raft is None:
        return encode_response(ctx.api_key, TopLevelError(Errors.BROKER_NOT_AVAILABLE))
    try:
        message = decode_request(ctx.api_key, ctx.api_version, request, sender_of(request))
    except WrongPartition:
        return encode_response(ctx.api_key, TopLevelError(Errors.INVALID_REQUEST))
    sender = getattr(message, "replica_id", None)
    if sender is None:
        sender = getattr(message, "leader_id", -1)
    response = await raft.handle_request(sender, message)
    return encode_response(ctx.api_key, response)


def _fetch_replica(request: Any) -> int:
    state = getattr(request, "replica_state", None)
    replica = getattr(request, "replica_id", -1)
    if replica == -1 and state is not None:
        replica = state.replica_id
    return int(replica)


@handler(ApiKey.VOTE, (0, 2), scopes=(CONTROLLER,))
async def vote(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return await _serve(ctx, request, lambda r: -1)


@handler(ApiKey.BEGIN_QUORUM_EPOCH, (0, 1), scopes=(CONTROLLER,))
async def begin_quorum_epoch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return await _serve(ctx, request, lambda r: -1)


@handler(ApiKey.END_QUORUM_EPOCH, (0, 1), scopes=(CONTROLLER,))
async def end_quorum_epoch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return await _serve(ctx, request, lambda r: -1)


@handler(ApiKey.FETCH, (13, 17), scopes=(CONTROLLER,))
async def fetch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return await _serve(ctx, request, _fetch_replica)


@handler(ApiKey.FETCH_SNAPSHOT, (0, 1), scopes=(CONTROLLER,))
async def fetch_snapshot(ctx: RequestContext, request: Any) -> dict[str, Any]:
    return await _serve(ctx, request, lambda r: r.replica_id)
