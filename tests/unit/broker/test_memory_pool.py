"""queued.max.request.bytes as Kafka's non-strict SimpleMemoryPool: a reservation is granted
while any memory is left, and waiting connections resume, in order, when some comes back."""

from __future__ import annotations

from brook.broker.memory_pool import RequestMemoryPool


def test_granted_while_any_memory_is_left_so_one_request_may_go_over() -> None:
    pool = RequestMemoryPool(100)
    assert pool.reserve(60, force=False)
    assert pool.reserve(60, force=False)  # 40 were left: granted, the pool goes to -20
    assert pool.available == -20
    assert not pool.reserve(1, force=False)
    assert pool.reserve(5, force=True)  # small or already-read requests are taken anyway
    assert pool.available == -25
    pool.release(125)
    assert pool.available == 100


def test_release_wakes_waiters_in_order_while_memory_is_left() -> None:
    pool = RequestMemoryPool(100)
    assert pool.reserve(100, force=False)
    woken: list[str] = []

    def waiter(name: str, size: int) -> None:
        def wake() -> None:
            woken.append(name)
            assert pool.reserve(size, force=False)

        pool.wait(wake)

    waiter("a", 80)
    waiter("b", 80)
    waiter("c", 10)
    pool.release(50)  # 50 left: a takes 80 (-30), b and c keep waiting
    assert woken == ["a"] and pool.waiting == 2
    pool.release(80)  # 50 left: b takes 80 (-30)
    assert woken == ["a", "b"] and pool.waiting == 1
    pool.release(100)
    assert woken == ["a", "b", "c"] and pool.waiting == 0


def test_a_cancelled_waiter_is_not_woken() -> None:
    pool = RequestMemoryPool(10)
    pool.reserve(10, force=False)
    woken: list[int] = []

    def wake() -> None:
        woken.append(1)

    pool.wait(wake)
    pool.cancel(wake)
    pool.cancel(wake)  # twice is harmless
    pool.release(10)
    assert woken == []
