"""``brook acls``: add, remove or list ACLs, as kafka-acls.sh (Kafka's AclCommand).

    brook acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:alice \\
        --operation Read --operation Describe --topic orders
    brook acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:bob \\
        --consumer --topic orders --group billing
    brook acls --bootstrap-server 127.0.0.1:9092 --list --topic orders
    brook acls --bootstrap-server 127.0.0.1:9092 --remove --force --topic orders

The flags, their defaults and the output lines are AclCommand's: hosts default to ``*``,
operations to All; ``--producer`` is WRITE, DESCRIBE and CREATE on the topics (WRITE and
DESCRIBE on transactional ids, IDEMPOTENT_WRITE on the cluster with ``--idempotent``),
``--consumer`` READ and DESCRIBE on the topics and READ on the groups; ``--remove`` without a
principal removes every ACL of the resource, and asks first unless ``--force``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from brook.client.admin import Admin
from brook.security.acl import (
    CLUSTER_NAME,
    WILDCARD,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from brook.security.principal import KafkaPrincipal

from .common import (
    CommandError,
    ToolParser,
    add_connection_args,
    client_properties,
    parse_args,
    run,
)

Pattern = tuple[ResourceType, str, PatternType]


def build_parser() -> ToolParser:
    p = ToolParser(prog="brook acls", description="Add, remove or list ACLs (kafka-acls).")
    add_connection_args(p, "property file containing configs to be passed to the admin client")
    actions = p.add_mutually_exclusive_group()
    actions.add_argument("--add", action="store_true", help="add ACLs")
    actions.add_argument("--remove", action="store_true", help="remove ACLs")
    actions.add_argument("--list", action="store_true", help="list ACLs")
    p.add_argument("--topic", action="append", default=[], help="topic (repeatable; * = all)")
    p.add_argument("--group", action="append", default=[], help="consumer group (repeatable)")
    p.add_argument("--cluster", action="store_true", help="the cluster resource")
    p.add_argument("--transactional-id", action="append", default=[], help="transactional id")
    p.add_argument("--delegation-token", action="append", default=[], help="delegation token")
    p.add_argument("--user-principal", action="append", default=[], help="user resource")
    p.add_argument(
        "--resource-pattern-type",
        default=None,
        help="LITERAL or PREFIXED (add); also ANY or MATCH (list, remove)",
    )
    p.add_argument("--allow-principal", action="append", default=[], help="Type:name to allow")
    p.add_argument("--deny-principal", action="append", default=[], help="Type:name to deny")
    p.add_argument("--principal", action="append", default=[], help="list: ACLs of principal")
    p.add_argument("--allow-host", action="append", default=[], help="host to allow (default *)")
    p.add_argument("--deny-host", action="append", default=[], help="host to deny (default *)")
    p.add_argument("--operation", action="append", default=[], help="operation (default All)")
    p.add_argument("--producer", action="store_true", help="the ACLs a producer needs")
    p.add_argument("--consumer", action="store_true", help="the ACLs a consumer needs")
    p.add_argument("--idempotent", action="store_true", help="with --producer: IdempotentWrite")
    p.add_argument("--force", action="store_true", help="do not ask before removing")
    return p


def _enum_of(kind: type, text: str, what: str) -> object:
    key = text.replace("-", "").replace("_", "").lower()
    for member in kind:  # type: ignore[attr-defined]
        if member.name.replace("_", "").lower() == key:
            return member
    raise CommandError(f"Invalid {what}: {text}")


def operation_of(text: str) -> AclOperation:
    op = _enum_of(AclOperation, text, "operation")
    if op in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise CommandError(f"Invalid operation: {text}")
    return op  # type: ignore[return-value]


def _principal(text: str) -> str:
    try:
        return str(KafkaPrincipal.parse(text))
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _pattern_type(args: argparse.Namespace) -> PatternType:
    default = "ANY" if args.list else "LITERAL"
    pattern = _enum_of(PatternType, args.resource_pattern_type or default, "resource-pattern-type")
    if pattern == PatternType.UNKNOWN:
        raise CommandError(f"Invalid resource-pattern-type: {args.resource_pattern_type}")
    if args.add and pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise CommandError(
            "A '--resource-pattern-type' value of 'Any' or 'Match' is not valid when adding acls."
        )
    return pattern  # type: ignore[return-value]


def resources(args: argparse.Namespace) -> list[Pattern]:
    pattern = _pattern_type(args)
    out: list[Pattern] = [(ResourceType.TOPIC, t, pattern) for t in args.topic]
    out += [(ResourceType.GROUP, g, pattern) for g in args.group]
    out += [(ResourceType.TRANSACTIONAL_ID, t, pattern) for t in args.transactional_id]
    out += [(ResourceType.DELEGATION_TOKEN, t, pattern) for t in args.delegation_token]
    out += [(ResourceType.USER, u, pattern) for u in args.user_principal]
    if args.cluster or (args.producer and args.idempotent):
        out.append((ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    return out


def _operations_for(kind: ResourceType, args: argparse.Namespace) -> list[AclOperation]:
    """--producer / --consumer as AclCommand expands them, else the --operation values."""
    if args.producer or args.consumer:
        ops: list[AclOperation] = []
        if args.producer:
            ops += {
                ResourceType.TOPIC: [
                    AclOperation.WRITE,
                    AclOperation.DESCRIBE,
                    AclOperation.CREATE,
                ],
                ResourceType.TRANSACTIONAL_ID: [AclOperation.WRITE, AclOperation.DESCRIBE],
                ResourceType.CLUSTER: [AclOperation.IDEMPOTENT_WRITE],
            }.get(kind, [])
        if args.consumer:
            ops += {
                ResourceType.TOPIC: [AclOperation.READ, AclOperation.DESCRIBE],
                ResourceType.GROUP: [AclOperation.READ],
            }.get(kind, [])
        return list(dict.fromkeys(ops))
    return [operation_of(o) for o in args.operation] or [AclOperation.ALL]


def acls_to_add(args: argparse.Namespace) -> dict[Pattern, list[AclBinding]]:
    if not args.allow_principal and not args.deny_principal:
        raise CommandError("You must specify one of: --allow-principal, --deny-principal")
    out: dict[Pattern, list[AclBinding]] = {}
    for resource in resources(args):
        kind, name, pattern = resource
        entries: list[AclBinding] = []
        for principals, hosts, permission in (
            (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
            (args.deny_principal, args.deny_host, AclPermissionType.DENY),
        ):
            for principal in principals:
                for host in hosts or [WILDCARD]:
                    for op in _operations_for(kind, args):
                        entries.append(
                            AclBinding(
                                kind, name, pattern, _principal(principal), host, op, permission
                            )
                        )
        if entries:
            out[resource] = entries
    return out


def _pattern_text(resource: Pattern) -> str:
    kind, name, pattern = resource
    return f"ResourcePattern(resourceType={kind.name}, name={name}, patternType={pattern.name})"


def _entry_text(acl: AclBinding) -> str:
    return (
        f"(principal={acl.principal}, host={acl.host}, operation={acl.operation.name}, "
        f"permissionType={acl.permission.name})"
    )


def _print_acls(title: str, resource: Pattern, acls: Iterable[AclBinding]) -> None:
    print(f"{title} `{_pattern_text(resource)}`: ")
    for acl in acls:
        print(f" \t{_entry_text(acl)} ")
    print()


def _filter(resource: Pattern | None, principal: str | None = None) -> AclBindingFilter:
    if resource is None:
        return AclBindingFilter(
            ResourceType.ANY,
            None,
            PatternType.ANY,
            principal,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
    kind, name, pattern = resource
    return AclBindingFilter(
        kind, name, pattern, principal, None, AclOperation.ANY, AclPermissionType.ANY
    )


def _by_resource(acls: Iterable[AclBinding]) -> dict[Pattern, list[AclBinding]]:
    out: dict[Pattern, list[AclBinding]] = {}
    for acl in sorted(acls, key=str):
        out.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(acl)
    return out


def list_acls(admin: Admin, args: argparse.Namespace) -> None:
    principals = [_principal(p) for p in args.principal] or [None]
    targets: list[Pattern | None] = list(resources(args)) or [None]
    found: list[AclBinding] = []
    for resource in targets:
        for principal in principals:
            found += admin.describe_acls(_filter(resource, principal))
    if args.principal:
        for principal in principals:
            mine = [a for a in found if a.principal == principal]
            print(f"ACLs for principal `{principal}`")
            for resource, acls in _by_resource(mine).items():
                _print_acls("Current ACLs for resource", resource, acls)
        return
    for resource, acls in _by_resource(found).items():
        _print_acls("Current ACLs for resource", resource, acls)


def add_acls(admin: Admin, args: argparse.Namespace) -> None:
    wanted = acls_to_add(args)
    for resource, acls in wanted.items():
        _print_acls("Adding ACLs for resource", resource, acls)
    admin.create_acls([acl for acls in wanted.values() for acl in acls])
    for resource in wanted:
        _print_acls("Current ACLs for resource", resource, admin.describe_acls(_filter(resource)))


def remove_acls(admin: Admin, args: argparse.Namespace) -> None:
    targets = resources(args)
    if not targets:
        raise CommandError("You must specify one of: --topic, --cluster, --group, ...")
    explicit = bool(args.allow_principal or args.deny_principal)
    for resource in targets:
        if explicit:
            acls = acls_to_add(args).get(resource, [])
            question = "Are you sure you want to remove ACLs: \n" + "\n".join(
                f" \t{_entry_text(a)} " for a in acls
            )
            filters = [
                AclBindingFilter(
                    a.resource_type,
                    a.resource_name,
                    a.pattern_type,
                    a.principal,
                    a.host,
                    a.operation,
                    a.permission,
                )
                for a in acls
            ]
        else:
            question = "Are you sure you want to delete all ACLs for resource"
            filters = [_filter(resource)]
        question += f" from resource `{_pattern_text(resource)}`? (y/n)"
        if not args.force and not _confirm(question):
            continue
        admin.delete_acls(filters)
        _print_acls("Current ACLs for resource", resource, admin.describe_acls(_filter(resource)))


def _confirm(question: str) -> bool:
    print(question)
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)
    if not (args.add or args.remove or args.list):
        parser.fail("Command must include exactly one action: --list, --add, --remove.")
    if args.consumer and not args.group and args.add:
        parser.fail("With --consumer you must specify a --group")
    if (args.producer or args.consumer) and not args.add:
        parser.fail("--producer and --consumer are only valid with --add")

    def body() -> None:
        props = client_properties(args.bootstrap_server, args.command_config)
        with Admin(props) as admin:
            if args.add:
                add_acls(admin, args)
            elif args.remove:
                remove_acls(admin, args)
            else:
                list_acls(admin, args)

    return run(body, "Error while executing ACL command: ")
