"""SubscriptionState: assignment and subscription kinds, positions, resets, pause."""

from __future__ import annotations

import re

import pytest

from brook.client.cluster import TopicPartition
from brook.client.consumer.subscription import (
    FetchState,
    SubscriptionState,
    SubscriptionType,
    reset_spec,
)

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_reset_spec_maps_the_policy_to_list_offsets_timestamps() -> None:
    assert (reset_spec("earliest"), reset_spec("latest"), reset_spec("none")) == (-2, -1, None)


def test_assigned_partitions_start_without_a_position() -> None:
    subs = SubscriptionState()
    assert subs.assign_from_user([("a", 0), ("a", 1)])
    assert subs.type is SubscriptionType.USER_ASSIGNED
    assert subs.assignment == [A0, A1]
    assert subs.initializing() == [A0, A1]
    assert subs.fetchable() == []
    assert subs.position(A0) is None


def test_seek_makes_a_partition_fetchable_and_a_reassignment_keeps_its_state() -> None:
    subs = SubscriptionState()
    subs.assign_from_user([A0, A1])
    subs.seek(A0, 7)
    assert subs.fetchable() == [A0]
    before = subs.assignment_id
    assert subs.assign_from_user([A0, B0])
    assert subs.assignment_id == before + 1
    assert subs.position(A0) == 7 and subs.position(B0) is None
    assert not subs.assign_from_user([A0, B0])  # unchanged
    with pytest.raises(ValueError, match="no current assignment for partition a-1"):
        subs.position(A1)


def test_negative_seek_is_refused() -> None:
    subs = SubscriptionState()
    subs.assign_from_user([A0])
    with pytest.raises(ValueError, match="must not be negative"):
        subs.seek(A0, -1)


def test_reset_waits_for_a_lookup_and_applies_only_the_matching_one() -> None:
    subs = SubscriptionState("earliest")
    subs.assign_from_user([A0, A1])
    subs.request_reset(A0)
    subs.request_reset(A1, -1)
    assert subs.awaiting_reset() == {A0: -2, A1: -1}
    assert subs.states()[A0].fetch_state is FetchState.AWAIT_RESET
    assert not subs.complete_reset(A0, -1, 5, 0)  # a lookup for another spec
    assert subs.complete_reset(A0, -2, 5, 3)
    assert subs.position(A0) == 5 and subs.states()[A0].position_epoch == 3
    subs.seek(A1, 9)  # the user moved it meanwhile: a late lookup result is dropped
    assert not subs.complete_reset(A1, -1, 100, 0)
    assert subs.position(A1) == 9


def test_reset_with_policy_none_is_an_error() -> None:
    subs = SubscriptionState("none")
    subs.assign_from_user([A0])
    with pytest.raises(ValueError, match="none"):
        subs.request_reset(A0)


def test_paused_partitions_are_not_fetchable() -> None:
    subs = SubscriptionState()
    subs.assign_from_user([A0, A1])
    subs.seek(A0, 0)
    subs.seek(A1, 0)
    subs.pause([A1])
    assert subs.paused == [A1]
    assert subs.fetchable() == [A0]
    assert subs.fetchable(lambda tp: tp != A0) == []
    subs.resume([A1])
    assert subs.fetchable() == [A0, A1]


def test_assignment_and_subscription_are_mutually_exclusive() -> None:
    subs = SubscriptionState()
    subs.subscribe(["a"])
    assert subs.type is SubscriptionType.AUTO_TOPICS and subs.topics == {"a"}
    with pytest.raises(ValueError, match="mutually exclusive"):
        subs.assign_from_user([A0])
    subs.unsubscribe()
    assert subs.type is SubscriptionType.NONE
    subs.assign_from_user([A0])
    with pytest.raises(ValueError, match="mutually exclusive"):
        subs.subscribe_pattern("a.*")
    subs.assign_from_user([])
    assert subs.type is SubscriptionType.NONE and subs.assignment == []


def test_pattern_matches_whole_names_and_leaves_internal_topics_out() -> None:
    subs = SubscriptionState()
    subs.subscribe_pattern(re.compile("ev.*"))
    topics = {"events": False, "evil": False, "old-events": False, "ev_internal": True}
    assert subs.match_topics(topics)
    assert subs.topics == {"events", "evil"}
    assert not subs.match_topics(topics)
    assert subs.match_topics(topics, exclude_internal=False)
    assert subs.topics == {"events", "evil", "ev_internal"}


def test_the_coordinator_assigns_only_subscribed_topics() -> None:
    subs = SubscriptionState()
    with pytest.raises(ValueError, match="topic or pattern subscription"):
        subs.assign_from_subscribed([A0])
    subs.subscribe(["a"])
    subs.assign_from_subscribed([A0, A1])
    assert subs.assignment == [A0, A1]
    with pytest.raises(ValueError, match="not in the subscription"):
        subs.assign_from_subscribed([B0])


def test_fetch_info_keeps_known_values_when_the_broker_sends_none() -> None:
    subs = SubscriptionState()
    subs.assign_from_user([A0])
    subs.update_fetch_info(A0, 10, 8, 2)
    subs.update_fetch_info(A0, 12, -1, -1)
    state = subs.states()[A0]
    assert (state.high_watermark, state.last_stable_offset, state.log_start_offset) == (12, 8, 2)
    subs.update_fetch_info(B0, 1, 1, 1)  # not assigned: ignored
