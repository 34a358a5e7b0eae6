"""IncrementalAlterConfigs (44), v0-1: SET, DELETE, APPEND and SUBTRACT (list configs only)
on topic configs and on brokers' dynamic defaults of topic configs."""

from __future__ import annotations

from typing import Any

from brook.metadata.controller import ConfigOp
from brook.protocol.api import ApiKey

from ..registry import RequestContext, handler
from .alter_configs import alter


@handler(ApiKey.INCREMENTAL_ALTER_CONFIGS, (0, 1))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    resources = [
        (
            r.resource_type,
            r.resource_name,
            [ConfigOp(c.name, c.config_operation, c.value) for c in r.configs],
        )
        for r in request.resources
    ]
    return await alter(ctx, resources, True, bool(request.validate_only))
