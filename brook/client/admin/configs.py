"""The admin client's config operations: DescribeConfigs and IncrementalAlterConfigs, one
request per resource. A broker's (or broker logger's) configs are asked of that broker, as
Java's client does; the rest of any broker. Only a lost connection or a timeout is retried:
a broker's answer about a resource is final."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from brook.protocol.api import ApiKey

from .core import AdminCore, Outcome, gather, item_error, retry_transport
from .types import (
    AlterConfigOp,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
)

__all__ = ["describe_configs", "incremental_alter_configs"]


async def describe_configs(
    core: AdminCore,
    resources: Iterable[ConfigResource],
    *,
    include_synonyms: bool = False,
    include_documentation: bool = False,
    timeout_ms: int | None = None,
) -> dict[ConfigResource, dict[str, ConfigEntry]]:
    """Every config of each resource, as the broker reports it."""
    wanted = {r: r for r in resources}
    deadline = core.deadline(timeout_ms)

    async def one(resource: ConfigResource) -> Outcome:
        data = {
            "resources": [
                {
                    "resource_type": int(resource.type),
                    "resource_name": resource.name,
                    "configuration_keys": None,
                }
            ],
            "include_synonyms": include_synonyms,
            "include_documentation": include_documentation,
        }
        resp = await _send_for_resource(core, resource, ApiKey.DESCRIBE_CONFIGS, data)
        out: Outcome = {}
        for r in resp.results:
            code = int(r.error_code)
            if code:
                out[resource] = item_error(code, resource_text(resource), r.error_message)
                continue
            out[resource] = {c.name: _config_entry(c) for c in r.configs}
        return out

    return await core.per_item(
        wanted,
        lambda pending, _d: gather(one, pending, resource_text),
        deadline,
        retry_transport,
    )


async def incremental_alter_configs(
    core: AdminCore,
    changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
    *,
    validate_only: bool = False,
    timeout_ms: int | None = None,
) -> None:
    """SET / DELETE / APPEND / SUBTRACT config values of topics or brokers."""
    wanted = {r: list(ops) for r, ops in changes.items()}
    deadline = core.deadline(timeout_ms)

    async def one(resource: ConfigResource) -> Outcome:
        data = {
            "resources": [
                {
                    "resource_type": int(resource.type),
                    "resource_name": resource.name,
                    "configs": [
                        {"name": op.name, "config_operation": int(op.op), "value": op.value}
                        for op in wanted[resource]
                    ],
                }
            ],
            "validate_only": validate_only,
        }
        resp = await _send_for_resource(core, resource, ApiKey.INCREMENTAL_ALTER_CONFIGS, data)
        out: Outcome = {}
        for r in resp.responses:
            code = int(r.error_code)
            out[resource] = (
                item_error(code, resource_text(resource), r.error_message) if code else None
            )
        return out

    await core.per_item(
        wanted,
        lambda pending, _d: gather(one, pending, resource_text),
        deadline,
        retry_transport,
    )


def resource_text(resource: ConfigResource) -> str:
    """How an error names a resource: ``topic 'orders'``, ``broker '1'``."""
    return f"{resource.type.name.lower()} {resource.name!r}"


async def _send_for_resource(
    core: AdminCore, resource: ConfigResource, api_key: int, data: Mapping[str, Any]
) -> Any:
    # Broker (and broker logger) configs live on that broker; the rest anywhere.
    if (
        resource.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER)
        and resource.name
    ):
        return await core.send_to(int(resource.name), api_key, data)
    return await core.send_any(api_key, data)


def _config_entry(c: Any) -> ConfigEntry:
    return ConfigEntry(
        c.name,
        c.value,
        ConfigSource.of(int(getattr(c, "config_source", 0))),
        bool(c.read_only),
        bool(c.is_sensitive),
        tuple(
            ConfigSynonym(s.name, s.value, ConfigSource.of(int(s.source)))
            for s in getattr(c, "synonyms", ())
        ),
        int(getattr(c, "config_type", 0)),
        getattr(c, "documentation", None),
    )
