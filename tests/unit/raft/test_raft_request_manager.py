"""``RequestManager``: one request in flight per destination, timeouts, backoff after a
failure, and only the request in flight may be answered."""

from __future__ import annotations

import random

from brook.raft.messages import VoteRequest
from brook.raft.request_manager import RequestManager


def manager() -> RequestManager:
    return RequestManager(
        (1, 2, 3), retry_backoff_ms=20, request_timeout_ms=2000, rng=random.Random(0)
    )


def request() -> VoteRequest:
    return VoteRequest(None, 1, 1, 0, 0)


def test_one_request_in_flight_per_destination_until_it_is_answered() -> None:
    rm = manager()
    sent = request()
    rm.on_request_sent(2, sent, 100)
    assert not rm.is_ready(2, 100) and rm.is_ready(3, 100)
    assert rm.has_any_inflight(100)
    assert rm.next_ready_at(2, 100) == 2100
    rm.on_response(2, sent, True, 150)
    assert rm.is_ready(2, 150) and not rm.has_any_inflight(150)


def test_an_unanswered_request_times_out() -> None:
    rm = manager()
    rm.on_request_sent(2, request(), 100)
    assert not rm.has_request_timed_out(2, 2099)
    assert rm.has_request_timed_out(2, 2100)
    assert rm.is_ready(2, 2100)


def test_a_failure_backs_off() -> None:
    rm = manager()
    sent = request()
    rm.on_request_sent(2, sent, 100)
    rm.on_response(2, sent, False, 150)
    assert rm.is_backing_off(2, 169) and not rm.is_ready(2, 169)
    assert rm.next_ready_at(2, 160) == 170
    assert rm.is_ready(2, 170)


def test_only_the_request_in_flight_is_expected() -> None:
    rm = manager()
    old, new = request(), request()
    rm.on_request_sent(2, old, 0)
    rm.on_request_sent(2, new, 10)
    assert not rm.is_expected(2, old) and rm.is_expected(2, new)
    rm.on_response(2, old, False, 20)  # a stale answer changes nothing
    assert rm.is_expected(2, new)
    rm.on_response(2, new, True, 30)
    assert not rm.is_expected(2, new)  # nor can it be answered twice
    rm.on_request_sent(3, old, 40)
    rm.reset_all()
    assert not rm.is_expected(3, old)


def test_a_bootstrap_node_is_picked_only_when_nothing_is_in_flight() -> None:
    rm = manager()
    picked = {rm.find_ready_bootstrap(0, exclude=1) for _ in range(50)}
    assert picked == {2, 3}
    rm.on_request_sent(2, request(), 0)
    assert rm.find_ready_bootstrap(0, exclude=1) is None
    assert rm.backoff_before_available_bootstrap(0, exclude=1) == 2000


def test_backoff_before_a_bootstrap_node_is_free() -> None:
    rm = manager()
    for node in (2, 3):
        sent = request()
        rm.on_request_sent(node, sent, 0)
        rm.on_response(node, sent, False, 5)
    assert rm.find_ready_bootstrap(10, exclude=1) is None
    assert rm.backoff_before_available_bootstrap(10, exclude=1) == 25
    assert rm.find_ready_bootstrap(25, exclude=1) in (2, 3)
