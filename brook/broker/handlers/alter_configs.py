"""AlterConfigs (33), v0-2: the legacy call whose entries replace all of a resource's
dynamic overrides. Topic and broker (dynamic defaults of topic configs) resources.

A topic needs ALTER_CONFIGS on it (TOPIC_AUTHORIZATION_FAILED), a broker ALTER_CONFIGS on the
cluster (CLUSTER_AUTHORIZATION_FAILED); IncrementalAlterConfigs shares this.
"""

from __future__ import annotations

from typing import Any

from brook.metadata.controller import ConfigOp, OpType, Outcome
from brook.metadata.controller_api import ControllerError
from brook.protocol.api import ApiKey

from ..controller_channel import call_controller
from ..registry import BROKER, CONTROLLER, RequestContext, handler
from .describe_configs import config_refusal

REMOTE_VERSION = 2
Resources = list[tuple[int, str, list[ConfigOp]]]


def request_of(resources: Resources, validate_only: bool) -> dict:
    return {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [{"name": op.name, "value": op.value} for op in ops],
            }
            for rtype, name, ops in resources
        ],
        "validate_only": validate_only,
    }


def results_of(response: Any) -> list[Outcome]:
    return [Outcome(r.error_code, r.error_message) for r in response.responses]


@handler(ApiKey.ALTER_CONFIGS, (0, 2), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    resources = [
        (
            r.resource_type,
            r.resource_name,
            [ConfigOp(c.name, OpType.SET, c.value) for c in r.configs],
        )
        for r in request.resources
    ]
    return await alter(ctx, resources, False, bool(request.validate_only))


async def alter(
    ctx: RequestContext,
    resources: list[tuple[int, str, list[ConfigOp]]],
    incremental: bool,
    validate_only: bool,
) -> dict[str, Any]:
    refused: dict[int, Outcome] = {}
    if not ctx.on_controller_listener:
        for i, (rtype, name, _) in enumerate(resources):
            refusal = config_refusal(ctx, rtype, name, describe=False)
            if refusal is not None:
                refused[i] = Outcome(*refusal)
    wanted = [r for i, r in enumerate(resources) if i not in refused]
    decided: list[Outcome] = []
    if wanted:
        try:
            decided = await call_controller(
                ctx.broker,
                lambda c: c.alter_configs(wanted, incremental, validate_only),
                local=ctx.on_controller_listener,
            )
        except ControllerError as exc:
            decided = [Outcome(exc.error_code, exc.message) for _ in wanted]
    answers = iter(decided)
    outcomes = [refused[i] if i in refused else next(answers) for i in range(len(resources))]
    responses = [
        {
            "error_code": o.error_code,
            "error_message": o.error_message,
            "resource_type": rtype,
            "resource_name": name,
        }
        for (rtype, name, _), o in zip(resources, outcomes, strict=True)
    ]
    return {"throttle_time": 0, "responses": responses}
