"""The follower's incremental fetch session (KIP-227): the first fetch is full, later ones
carry only what changed and forget what left, and every session error or failed send makes
the next fetch full again."""

from __future__ import annotations

import uuid

from brook.broker.replica_fetcher.session import FetchPosition, FollowerSession
from brook.protocol.errors import Errors

TID = uuid.UUID(int=7)


def pos(offset: int, epoch: int = 1, topic_id: uuid.UUID = TID) -> FetchPosition:
    return FetchPosition(topic_id, offset, 0, 1 << 20, 5, epoch)


def opened(partitions: int = 3) -> FollowerSession:
    session = FollowerSession()
    for i in range(partitions):
        session.put(("t", i), pos(0))
    request = session.build()
    assert session.on_response(request, Errors.NONE, session_id=42)
    return session


def test_the_first_fetch_is_full_and_opens_a_session() -> None:
    session = FollowerSession()
    session.put(("t", 0), pos(0))
    session.put(("t", 1), pos(5))
    request = session.build()
    assert (request.session_id, request.epoch, request.is_full) == (0, 0, True)
    assert dict(request.to_send) == {("t", 0): pos(0), ("t", 1): pos(5)}
    assert session.on_response(request, Errors.NONE, session_id=42)
    assert (session.session_id, session.epoch) == (42, 1)


def test_incremental_fetches_send_only_the_partitions_whose_position_changed() -> None:
    session = opened(1000)
    assert session.build().to_send == {}  # nothing changed: an empty incremental fetch
    session.put(("t", 7), pos(30))
    session.put(("t", 8), pos(0))  # same as the session holds: not sent
    request = session.build()
    assert (request.session_id, request.epoch, request.is_full) == (42, 1, False)
    assert dict(request.to_send) == {("t", 7): pos(30)}
    assert session.on_response(request, Errors.NONE, session_id=42)
    assert session.epoch == 2
    assert session.held_position(("t", 7)) == pos(30)


def test_a_new_last_fetched_epoch_alone_is_a_change() -> None:
    session = opened(2)
    session.put(("t", 1), pos(0, epoch=2))
    assert dict(session.build().to_send) == {("t", 1): pos(0, epoch=2)}


def test_dropped_partitions_are_forgotten_once_and_sent_whole_when_back() -> None:
    session = opened(3)
    session.drop(("t", 1))
    request = session.build()
    assert dict(request.to_forget) == {("t", 1): TID}
    assert request.to_send == {}
    session.on_response(request, Errors.NONE, 42)
    session.drop(("t", 1))
    assert session.build().to_forget == {}
    session.put(("t", 1), pos(0))
    assert dict(session.build().to_send) == {("t", 1): pos(0)}


def test_a_partition_under_a_new_topic_id_forgets_the_old_one() -> None:
    session = opened(1)
    other = uuid.UUID(int=8)
    session.put(("t", 0), pos(0, topic_id=other))
    request = session.build()
    assert dict(request.to_forget) == {("t", 0): TID}
    assert dict(request.to_send) == {("t", 0): pos(0, topic_id=other)}


def test_session_id_not_found_starts_a_new_session_with_a_full_fetch() -> None:
    session = opened(3)
    session.put(("t", 0), pos(10))
    request = session.build()
    assert not session.on_response(request, Errors.FETCH_SESSION_ID_NOT_FOUND, 0)
    request = session.build()
    assert (request.session_id, request.epoch, request.is_full) == (0, 0, True)
    assert dict(request.to_send) == {("t", 0): pos(10), ("t", 1): pos(0), ("t", 2): pos(0)}


def test_invalid_session_epoch_closes_the_session_with_a_full_fetch() -> None:
    session = opened(2)
    request = session.build()
    assert not session.on_response(request, Errors.INVALID_FETCH_SESSION_EPOCH, 0)
    request = session.build()
    # the full fetch names the old session, which the leader closes before opening a new one
    assert (request.session_id, request.epoch, request.is_full) == (42, 0, True)
    assert len(request.to_send) == 2
    assert session.on_response(request, Errors.NONE, session_id=43)
    assert (session.session_id, session.epoch) == (43, 1)


def test_a_failed_send_makes_the_next_fetch_full() -> None:
    session = opened(2)
    session.build()
    session.on_send_failure()
    request = session.build()
    assert request.is_full and len(request.to_send) == 2


def test_a_leader_without_sessions_gets_full_fetches() -> None:
    session = FollowerSession()
    session.put(("t", 0), pos(0))
    request = session.build()
    assert session.on_response(request, Errors.NONE, session_id=0)
    request = session.build()
    assert request.is_full and dict(request.to_send) == {("t", 0): pos(0)}


def test_has_work_while_something_is_wanted_or_to_be_forgotten() -> None:
    session = FollowerSession()
    assert not session.has_work()
    session.put(("t", 0), pos(0))
    assert session.has_work()
    session.on_response(session.build(), Errors.NONE, 42)
    session.drop(("t", 0))
    assert session.has_work()  # the leader must be told to forget it
    session.on_response(session.build(), Errors.NONE, 42)
    assert not session.has_work()
