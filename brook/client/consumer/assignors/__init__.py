"""Partition assignors, chosen by ``partition.assignment.strategy``: Kafka's class names or the
protocol names (``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``), or an object
that implements ``base.Assignor``. The order is the member's preference in JoinGroup."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from brook.config.defs import ConfigError

from .base import Assignor, AssignorBase, GroupMember, RebalanceProtocol
from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor
from .sticky import CooperativeStickyAssignor, StickyAssignor

__all__ = [
    "Assignor",
    "AssignorBase",
    "CooperativeStickyAssignor",
    "GroupMember",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "rebalance_protocol",
    "resolve_assignors",
]

_PACKAGE = "org.apache.kafka.clients.consumer."
_BUILT_IN: dict[str, Callable[[], Assignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
    _PACKAGE + "RangeAssignor": RangeAssignor,
    _PACKAGE + "RoundRobinAssignor": RoundRobinAssignor,
    _PACKAGE + "StickyAssignor": StickyAssignor,
    _PACKAGE + "CooperativeStickyAssignor": CooperativeStickyAssignor,
}


def resolve_assignors(values: Iterable[Any]) -> list[Assignor]:
    """Assignor objects for the configured strategy list; ConfigError names what is unknown."""
    out: list[Assignor] = []
    for value in values:
        if isinstance(value, str):
            factory = _BUILT_IN.get(value.strip())
            if factory is None:
                raise ConfigError(
                    f"Invalid value {value} for configuration partition.assignment.strategy: "
                    "unknown assignor; use range, roundrobin, sticky, cooperative-sticky or "
                    "Kafka's class names"
                )
            out.append(factory())
        elif callable(getattr(value, "assign", None)) and isinstance(
            getattr(value, "name", None), str
        ):
            out.append(value)
        else:
            raise ConfigError(
                f"Invalid value {value!r} for configuration partition.assignment.strategy"
            )
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise ConfigError(
            f"partition.assignment.strategy names an assignor twice: {', '.join(names)}"
        )
    if not out:
        raise ConfigError("partition.assignment.strategy must name at least one assignor")
    return out


def rebalance_protocol(assignors: Iterable[Assignor]) -> RebalanceProtocol:
    """Java's rule: cooperative only when every configured assignor supports it."""
    common = set(RebalanceProtocol)
    for assignor in assignors:
        common &= set(getattr(assignor, "protocols", (RebalanceProtocol.EAGER,)))
    if not common:
        raise ConfigError(
            "the configured assignors have no rebalance protocol in common (eager, cooperative)"
        )
    return (
        RebalanceProtocol.COOPERATIVE
        if RebalanceProtocol.COOPERATIVE in common
        else RebalanceProtocol.EAGER
    )
