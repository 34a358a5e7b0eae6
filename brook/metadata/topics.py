"""Topic name rules (Kafka's ``Topic.validate``) and replica placement for new partitions."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from .records import METADATA_TOPIC

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
# Kafka's Topic.isInternal set, plus the metadata log's name (never a topic, never creatable).
INTERNAL_TOPICS = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"}
)
# Names nothing may create, not even the node itself: the metadata log lives under this one.
RESERVED_TOPICS = frozenset({METADATA_TOPIC})


def is_internal(name: str | None) -> bool:
    """Whether ``name`` is a topic that only the node itself writes, creates or deletes."""
    return name in INTERNAL_TOPICS


def reserved_topic_error(name: str) -> str | None:
    """Why ``name`` may not be created by a client (Kafka's ControllerApis answers it with
    INVALID_REQUEST), or None."""
    if name in RESERVED_TOPICS:
        return f"Creation of internal topic {name} is prohibited."
    return None


def topic_name_error(name: str) -> str | None:
    """Why ``name`` is not a legal topic name, or None when it is."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return (
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name: {name}"
        )
    if not _LEGAL.match(name):
        return (
            f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def collision_key(name: str) -> str:
    """Kafka treats '.' and '_' as colliding in metric names."""
    return name.replace(".", "_")


def place_replicas(
    brokers: Sequence[int],
    num_partitions: int,
    replication_factor: int,
    *,
    first_partition: int = 0,
    rng: random.Random | None = None,
) -> list[list[int]]:
    """Spread replicas round-robin from a random start, shifting followers per round, so
    leaders and followers are balanced across brokers (Kafka's non-rack-aware placement)."""
    if replication_factor > len(brokers):
        raise ValueError("replication factor larger than the broker count")
    ordered = sorted(brokers)
    n = len(ordered)
    rng = rng or random.Random()
    start = rng.randrange(n)
    shift = rng.randrange(n)
    out = []
    for p in range(first_partition, first_partition + num_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (start + p) % n
        replicas = [ordered[first]]
        for j in range(replication_factor - 1):
            replicas.append(ordered[(first + 1 + (shift + j) % (n - 1)) % n])
        out.append(replicas)
    return out
