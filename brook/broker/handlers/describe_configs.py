"""DescribeConfigs (32), v1-4: topic and broker resources with each value's source, synonyms
(v1+), type and documentation (v3+).

A topic value comes from its own override (DYNAMIC_TOPIC_CONFIG), else from the broker key
that supplies its default: a dynamic per-broker or cluster-wide value, server.properties
(STATIC_BROKER_CONFIG), or the built-in default (DEFAULT_CONFIG), as Kafka reports them.

A topic needs DESCRIBE_CONFIGS on it (TOPIC_AUTHORIZATION_FAILED), a broker DESCRIBE_CONFIGS
on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from brook.config.defs import ConfigError, ConfigKey, Type
from brook.config.server import SERVER_CONFIG
from brook.config.topic import SERVER_DEFAULT, TOPIC_CONFIG
from brook.metadata.records import ConfigResourceType
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler

if TYPE_CHECKING:
    from ..server import Broker


class Source:
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


_TYPE_CODE = {
    Type.BOOLEAN: 1,
    Type.STRING: 2,
    Type.INT: 3,
    Type.SHORT: 4,
    Type.LONG: 5,
    Type.DOUBLE: 6,
    Type.LIST: 7,
    Type.CLASS: 8,
    Type.PASSWORD: 9,
}


def render(value: Any) -> str | None:
    """A config value as Kafka prints it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _entry(
    key: ConfigKey,
    value: str | None,
    source: int,
    synonyms: list[dict[str, Any]],
    read_only: bool,
    docs: bool,
) -> dict[str, Any]:
    sensitive = key.type is Type.PASSWORD
    return {
        "name": key.name,
        "value": None if sensitive else value,
        "read_only": read_only,
        "config_source": source,
        "is_sensitive": sensitive,
        "synonyms": synonyms,
        "config_type": _TYPE_CODE.get(key.type, 0),
        "documentation": key.doc if docs else None,
    }


def _broker_synonyms(broker: Broker, server_key: str) -> list[tuple[str, str | None, int]]:
    """(name, value, source) of a broker key, most specific first."""
    out = []
    node_dynamic = broker.image.broker_configs(broker.node_id)
    cluster_dynamic = broker.image.broker_configs("")
    if server_key in node_dynamic:
        out.append((server_key, node_dynamic[server_key], Source.DYNAMIC_BROKER_CONFIG))
    if server_key in cluster_dynamic:
        out.append((server_key, cluster_dynamic[server_key], Source.DYNAMIC_DEFAULT_BROKER_CONFIG))
    if server_key in broker.config.explicit:
        out.append((server_key, render(broker.config[server_key]), Source.STATIC_BROKER_CONFIG))
    key = SERVER_CONFIG.key(server_key)
    out.append((server_key, render(key.default), Source.DEFAULT_CONFIG))
    return out


def describe_topic(
    broker: Broker,
    topic: str,
    overrides: Mapping[str, str | None],
    keys: Any,
    synonyms: bool,
    docs: bool,
) -> list[dict[str, Any]]:
    from .. import topic_config

    defaults = topic_config.broker_defaults(broker.config, broker.image, broker.node_id)
    entries = []
    for key in TOPIC_CONFIG:
        if keys is not None and key.name not in keys:
            continue
        chain: list[tuple[str, str | None, int]] = []
        if overrides.get(key.name) is not None:
            chain.append((key.name, overrides[key.name], Source.DYNAMIC_TOPIC_CONFIG))
        server_key = SERVER_DEFAULT.get(key.name)
        if server_key is not None:
            broker_chain = _broker_synonyms(broker, server_key)
            # The effective default resolves Kafka's hour/minute fallbacks; show that value.
            name, _, source = broker_chain[0]
            broker_chain[0] = (name, render(defaults[key.name]), source)
            chain.extend(broker_chain)
        else:
            chain.append((key.name, render(key.default), Source.DEFAULT_CONFIG))
        name, value, source = chain[0]
        syn = [{"name": n, "value": v, "source": s} for n, v, s in chain] if synonyms else []
        entries.append(_entry(key, value, source, syn, False, docs))
    return entries


def describe_broker(
    broker: Broker, name: str, keys: Any, synonyms: bool, docs: bool
) -> list[dict[str, Any]]:
    entries = []
    for key in SERVER_CONFIG:
        if keys is not None and key.name not in keys:
            continue
        chain = _broker_synonyms(broker, key.name)
        if name == "":
            chain = [c for c in chain if c[2] == Source.DYNAMIC_DEFAULT_BROKER_CONFIG]
            if not chain:
                continue
        _, value, source = chain[0]
        syn = [{"name": n, "value": v, "source": s} for n, v, s in chain] if synonyms else []
        entries.append(_entry(key, value, source, syn, True, docs))
    return entries


BROKER_LOGGER = 8  # not served (INVALID_REQUEST), but authorized first, as Kafka does


def config_refusal(
    ctx: RequestContext, resource_type: int, name: str, *, describe: bool
) -> tuple[int, str] | None:
    """DESCRIBE_CONFIGS (or ALTER_CONFIGS) on the topic or the cluster: Kafka's error for a
    caller without it, or None."""
    op = AclOperation.DESCRIBE_CONFIGS if describe else AclOperation.ALTER_CONFIGS
    topic = resource_type == ConfigResourceType.TOPIC
    if topic and not authz.authorize(ctx, op, ResourceType.TOPIC, name):
        return Errors.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
    cluster_wide = resource_type in (ConfigResourceType.BROKER, BROKER_LOGGER)
    if cluster_wide and not authz.authorize_cluster(ctx, op):
        return Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    return None


@handler(ApiKey.DESCRIBE_CONFIGS, (1, 4))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    synonyms = bool(request.include_synonyms)
    docs = bool(getattr(request, "include_documentation", False))
    results = []
    for res in request.resources:
        result: dict[str, Any] = {
            "error_code": Errors.NONE,
            "error_message": None,
            "resource_type": res.resource_type,
            "resource_name": res.resource_name,
            "configs": [],
        }
        keys = None if res.configuration_keys is None else set(res.configuration_keys)
        refusal = config_refusal(ctx, res.resource_type, res.resource_name, describe=True)
        try:
            if refusal is not None:
                result["error_code"], result["error_message"] = refusal
            elif res.resource_type == ConfigResourceType.TOPIC:
                if res.resource_name not in broker.image.topics:
                    result["error_code"] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                    result["error_message"] = (
                        f"Topic {res.resource_name} does not exist or is not accessible."
                    )
                else:
                    result["configs"] = describe_topic(
                        broker,
                        res.resource_name,
                        broker.image.topic_configs(res.resource_name),
                        keys,
                        synonyms,
                        docs,
                    )
            elif res.resource_type == ConfigResourceType.BROKER:
                if res.resource_name not in ("", str(broker.node_id)):
                    result["error_code"] = Errors.INVALID_REQUEST
                    result["error_message"] = (
                        f"Unexpected broker id, expected {broker.node_id} or empty string, but "
                        f"received {res.resource_name}"
                    )
                else:
                    result["configs"] = describe_broker(
                        broker, res.resource_name, keys, synonyms, docs
                    )
            else:
                result["error_code"] = Errors.INVALID_REQUEST
                result["error_message"] = f"Unsupported resource type {res.resource_type}"
        except ConfigError as exc:
            result["error_code"] = Errors.INVALID_CONFIG
            result["error_message"] = str(exc)
        results.append(result)
    return {"throttle_time": 0, "results": results}
