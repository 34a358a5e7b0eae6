"""``brook configs``: describe or alter topic and broker configs, as kafka-configs.sh.

    brook configs --bootstrap-server 127.0.0.1:9092 --entity-type topics --entity-name t \\
        --alter --add-config retention.ms=60000,cleanup.policy=[delete,compact]
    brook configs --bootstrap-server 127.0.0.1:9092 --describe --topic t --all

    brook configs --bootstrap-server 127.0.0.1:9092 --alter --entity-type users \\
        --entity-name alice --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
    brook configs --bootstrap-server 127.0.0.1:9092 --describe --entity-type users

Changes go through IncrementalAlterConfigs, users' SCRAM credentials through
AlterUserScramCredentials (the password is salted here, only the salted password is sent);
the output lines are Kafka's (ConfigCommand). Quota, client-metrics and group entities are
not served by Brook brokers.
"""

from __future__ import annotations

import argparse
import re

from brook.client.admin import Admin
from brook.client.admin.scram import ScramDeletion, ScramUpsertion
from brook.client.admin.types import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
)
from brook.protocol.errors import Errors, KafkaError

from .common import (
    CommandError,
    ToolParser,
    add_connection_args,
    client_properties,
    load_properties_file,
    parse_args,
    run,
)

ENTITY_TYPES = (
    "topics",
    "clients",
    "users",
    "brokers",
    "broker-loggers",
    "ips",
    "client-metrics",
    "groups",
)
SERVED = {"topics": ConfigResourceType.TOPIC, "brokers": ConfigResourceType.BROKER}
# --topic x is --entity-type topics --entity-name x, and so on.
SHORTHANDS = {
    "topic": "topics",
    "broker": "brokers",
    "broker_logger": "broker-loggers",
    "group": "groups",
    "client": "clients",
    "user": "users",
    "ip": "ips",
    "client_metrics": "client-metrics",
}
DEFAULT_SHORTHANDS = {
    "broker_defaults": "brokers",
    "client_defaults": "clients",
    "user_defaults": "users",
    "ip_defaults": "ips",
}
# Kafka's names for the config sources (ConfigEntry.ConfigSource).
SOURCE_NAMES = {
    ConfigSource.CLIENT_METRICS_CONFIG: "DYNAMIC_CLIENT_METRICS_CONFIG",
    ConfigSource.GROUP_CONFIG: "DYNAMIC_GROUP_CONFIG",
}
_KEY_CHARS = re.compile(r"[$a-zA-Z0-9._-]*")
# Split on commas outside [...]: "a=1,b=[x,y]" -> "a=1", "b=[x,y]".
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"


def build_parser() -> ToolParser:
    p = ToolParser(
        prog="brook configs", description="Describe or alter the configs of topics and brokers."
    )
    add_connection_args(p, "property file containing configs to be passed to the admin client")
    p.add_argument("--describe", action="store_true", help="list configs for the entity")
    p.add_argument("--alter", action="store_true", help="alter the configuration of the entity")
    p.add_argument(
        "--all",
        action="store_true",
        help="with --describe, list every config, not only the dynamic ones",
    )
    p.add_argument(
        "--entity-type", action="append", default=[], choices=ENTITY_TYPES, help="type of entity"
    )
    p.add_argument("--entity-name", action="append", default=[], help="name of entity")
    p.add_argument(
        "--entity-default", action="store_true", help="the cluster-wide default (brokers)"
    )
    p.add_argument(
        "--add-config",
        metavar="K1=V1,K2=[V1,V2]",
        help="configs to add; square brackets group values that contain commas",
    )
    p.add_argument("--add-config-file", metavar="FILE", help="a properties file of configs to add")
    p.add_argument(
        "--delete-config", action="append", default=[], metavar="K1,K2", help="configs to remove"
    )
    for flag, kind in SHORTHANDS.items():
        p.add_argument(
            f"--{flag.replace('_', '-')}",
            metavar="NAME",
            help=f"shorthand for --entity-type {kind} --entity-name NAME",
        )
    for flag, kind in DEFAULT_SHORTHANDS.items():
        p.add_argument(
            f"--{flag.replace('_', '-')}",
            action="store_true",
            help=f"shorthand for --entity-type {kind} --entity-default",
        )
    return p


def entities(p: ToolParser, a: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(entity types, entity names) with the shorthands folded in; "" = the default entity."""
    types = list(a.entity_type)
    names = list(a.entity_name)
    if a.entity_default:
        names.append("")
    for flag, kind in SHORTHANDS.items():
        value = getattr(a, flag)
        if value is not None:
            types.append(kind)
            names.append(value)
    for flag, kind in DEFAULT_SHORTHANDS.items():
        if getattr(a, flag):
            types.append(kind)
            names.append("")
    if not types:
        p.fail("Must specify --entity-type or one of the entity shorthands (--topic, --broker)")
    if len(names) > len(types):
        p.fail("More entity names specified than entity types")
    return types, names


def check_args(p: ToolParser, a: argparse.Namespace) -> None:
    if a.describe == a.alter:
        p.fail("Command must include exactly one action: --describe, --alter")
    if a.alter and not (a.add_config or a.add_config_file or a.delete_config):
        p.fail("Must specify --add-config, --add-config-file or --delete-config with --alter")
    if a.describe and (a.add_config or a.add_config_file or a.delete_config):
        p.fail("--add-config and --delete-config can only be used with --alter")
    if a.all and not a.describe:
        p.fail("--all can only be used with --describe")


def configs_to_add(a: argparse.Namespace) -> dict[str, str]:
    props: dict[str, str] = {}
    if a.add_config_file:
        props.update(load_properties_file(a.add_config_file))
    if a.add_config:
        for pair in re.split("," + _OUTSIDE_BRACKETS, a.add_config):
            kv = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, pair)
            if len(kv) != 2:
                raise CommandError(
                    "Invalid entity config: all configs to be added must be in the format "
                    '"key=val" or "key=[val1,val2]" to group values which contain commas.'
                )
            props[kv[0].strip()] = re.sub(r"\[?\]?", "", kv[1]).strip()
    for key in props:
        if not _KEY_CHARS.fullmatch(key):
            raise CommandError(f"Invalid character found for config key: {key}")
    return props


def configs_to_delete(a: argparse.Namespace) -> list[str]:
    return [name.strip() for item in a.delete_config for name in item.split(",") if name.strip()]


SCRAM_KEYS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def scram_alterations(
    name: str, to_add: dict[str, str], to_delete: list[str]
) -> list[ScramUpsertion | ScramDeletion]:
    """kafka-configs' user SCRAM syntax: ``SCRAM-SHA-256=[iterations=8192,password=...]``
    (iterations default to 4096) and ``--delete-config SCRAM-SHA-256``."""
    out: list[ScramUpsertion | ScramDeletion] = []
    for key, value in to_add.items():
        if key not in SCRAM_KEYS:
            raise CommandError(
                f"Invalid config {key} for users: Brook serves {', '.join(SCRAM_KEYS)} only"
            )
        fields = dict(
            part.split("=", 1) if "=" in part else (part, "") for part in value.split(",")
        )
        if "password" not in fields or not fields["password"]:
            raise CommandError(f"{key} needs password=...: {key}=[iterations=8192,password=...]")
        unknown = set(fields) - {"iterations", "password"}
        if unknown:
            raise CommandError(f"Invalid {key} setting(s): {', '.join(sorted(unknown))}")
        try:
            iterations = int(fields.get("iterations", "4096"))
        except ValueError:
            raise CommandError(f"Invalid iterations for {key}: not a number") from None
        out.append(ScramUpsertion(name, key, fields["password"], iterations))
    for key in to_delete:
        if key not in SCRAM_KEYS:
            raise CommandError(
                f"Invalid config {key} for users: Brook serves {', '.join(SCRAM_KEYS)} only"
            )
        out.append(ScramDeletion(name, key))
    return out


def alter_user(admin: Admin, name: str, a: argparse.Namespace) -> None:
    if not name:
        raise CommandError("SCRAM credentials need a user name (--entity-name)")
    results = admin.alter_user_scram_credentials(
        scram_alterations(name, configs_to_add(a), configs_to_delete(a))
    )
    error = results.get(name)
    if error is not None:
        raise CommandError(f"{error.message} ({error.name})")
    print(f"Completed updating config for user {name}.")


def describe_users(admin: Admin, name: str | None) -> None:
    try:
        found = admin.describe_user_scram_credentials(None if name is None else [name])
    except KafkaError as exc:
        if exc.code != Errors.RESOURCE_NOT_FOUND:
            raise
        found = {}
    for user, infos in found.items():
        listed = ", ".join(f"{i.mechanism}=iterations={i.iterations}" for i in infos)
        print(f"SCRAM credential configs for user-principal '{user}' are {listed}")


def served_type(kind: str) -> ConfigResourceType:
    rtype = SERVED.get(kind)
    if rtype is None:
        raise CommandError(
            f"{kind} configs are not supported: Brook brokers serve topic and broker configs only"
        )
    return rtype


def resource_for(kind: str, name: str) -> ConfigResource:
    rtype = served_type(kind)
    if kind == "topics" and not name:
        raise CommandError("--entity-default is not a valid option for entity-type topics")
    if kind == "brokers" and name and not name.isdigit():
        raise CommandError(
            f"The entity name for brokers must be a valid integer broker id, found: {name}"
        )
    return ConfigResource(rtype, name)


def dynamic_source(resource: ConfigResource) -> ConfigSource:
    if resource.type == ConfigResourceType.TOPIC:
        return ConfigSource.DYNAMIC_TOPIC_CONFIG
    if resource.name:
        return ConfigSource.DYNAMIC_BROKER_CONFIG
    return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


def resource_config(
    admin: Admin, resource: ConfigResource, all_: bool, synonyms: bool = True
) -> list[ConfigEntry]:
    described = admin.describe_configs([resource], include_synonyms=synonyms)[resource]
    wanted = None if all_ else dynamic_source(resource)
    return sorted(
        (e for e in described.values() if wanted is None or e.source == wanted),
        key=lambda e: e.name,
    )


def _source_name(source: ConfigSource) -> str:
    return SOURCE_NAMES.get(source, source.name)


def _text(value: str | None) -> str:
    return "null" if value is None else value


def entry_line(entry: ConfigEntry) -> str:
    synonyms = ", ".join(
        f"{_source_name(s.source)}:{s.name}={_text(s.value)}" for s in entry.synonyms
    )
    return (
        f"  {entry.name}={_text(entry.value)} sensitive={str(entry.sensitive).lower()} "
        f"synonyms={{{synonyms}}}"
    )


def describe(admin: Admin, kind: str, name: str | None, all_: bool) -> None:
    singular = kind[:-1]
    if name is not None and not all_:
        if kind == "topics":
            exists = name in admin.list_topics(include_internal=True)
        else:
            ids = {str(b.node_id) for b in admin.describe_cluster().brokers}
            exists = name in ids or name == ""
        if not exists:
            print(f"The {singular} '{name}' doesn't exist and doesn't have dynamic config.")
            return
    if name is not None:
        names = [name]
    elif kind == "topics":
        names = list(admin.list_topics(include_internal=True))
    else:
        names = [str(b.node_id) for b in admin.describe_cluster().brokers] + [""]
    for entity in names:
        resource = resource_for(kind, entity)
        if entity == "":
            print(f"Default configs for {kind} in the cluster are:")
        else:
            print(f"{'All' if all_ else 'Dynamic'} configs for {singular} {entity} are:")
        for entry in resource_config(admin, resource, all_):
            print(entry_line(entry))


def alter(admin: Admin, kind: str, name: str, a: argparse.Namespace) -> None:
    resource = resource_for(kind, name)
    to_add = configs_to_add(a)
    to_delete = configs_to_delete(a)
    current = {e.name for e in resource_config(admin, resource, False, synonyms=False)}
    missing = [c for c in to_delete if c not in current]
    if missing:
        raise CommandError(f"Invalid config(s): {','.join(missing)}")
    ops = [AlterConfigOp(c, None, AlterConfigOpType.DELETE) for c in to_delete]
    ops += [AlterConfigOp(k, v, AlterConfigOpType.SET) for k, v in to_add.items()]
    admin.incremental_alter_configs({resource: ops})
    if name:
        print(f"Completed updating config for {kind[:-1]} {name}.")
    else:
        print(f"Completed updating default config for {kind} in the cluster.")


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)

    def body() -> None:
        check_args(parser, args)
        types, names = entities(parser, args)
        if args.alter and len(types) != len(names):
            raise CommandError("An entity name must be specified for every entity type")
        kind = types[0]
        if kind != "users":
            served_type(kind)  # refuse what Brook does not serve before connecting
        props = client_properties(args.bootstrap_server, args.command_config)
        with Admin(props) as admin:
            if kind == "users":
                if args.alter:
                    alter_user(admin, names[0], args)
                else:
                    describe_users(admin, names[0] if names else None)
            elif args.alter:
                alter(admin, kind, names[0], args)
            else:
                describe(admin, kind, names[0] if names else None, args.all)

    return run(body, "Error while executing config command: ")
