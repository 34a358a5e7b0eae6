"""Consumer group rebalance time, Brook vs Tansu, with Brook's consumer on both in the same run.

    python -m bench.group_rebalance [--members 10] [--partitions 100] [--rounds 3]

Each round creates a topic of ``--partitions`` partitions and a new group; ``--members``
AsyncConsumers (one process, one event loop) subscribe at once. "join" is the time from the
first subscribe until every member holds a non-empty share and the shares cover every
partition exactly once; "leave" is the time from one member's close (LeaveGroup) until the
others cover every partition again. Medians over the rounds, ratio Brook / Tansu (below 1:
Brook is faster).

A new group's first rebalance waits ``group.initial.rebalance.delay.ms`` on Brook (Kafka's
3000 ms default), which dominates "join"; Tansu has no such setting, so Brook is measured both
with the default and with the delay set to 0.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from typing import Any

from brook.client.admin import AsyncAdmin, NewTopic
from brook.client.consumer import AsyncConsumer

from .common import BROKERS, brook_broker, machine, median, save

TIME_LIMIT = 120.0
CONSUMER = {
    "auto.offset.reset": "earliest",
    "session.timeout.ms": 10000,
    "heartbeat.interval.ms": 500,
    "enable.auto.commit": False,
}


async def _wait_for_cover(members: list[AsyncConsumer], partitions: int) -> None:
    deadline = time.monotonic() + TIME_LIMIT
    while time.monotonic() < deadline:
        shares = []
        for m in members:
            await m.poll(0)
            shares.append(await m.assignment())
        owned = [tp for share in shares for tp in share]
        if all(shares) and len(owned) == partitions and len(set(owned)) == partitions:
            return
        await asyncio.sleep(0.01)
    raise TimeoutError("the group did not reach a stable assignment in time")


async def _poll_forever(member: AsyncConsumer) -> None:
    while True:
        await member.poll(50)


async def one_round(bootstrap: str, members: int, partitions: int) -> tuple[float, float]:
    topic = f"rebalance-{uuid.uuid4().hex[:8]}"
    async with AsyncAdmin({"bootstrap.servers": bootstrap}) as admin:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    group = f"{topic}-group"
    consumers = [
        AsyncConsumer({"bootstrap.servers": bootstrap, "group.id": group, **CONSUMER})
        for _ in range(members)
    ]
    for c in consumers:
        await c.start()
    try:
        started = time.monotonic()
        for c in consumers:
            await c.subscribe([topic])
        await _wait_for_cover(consumers, partitions)
        joined = time.monotonic() - started
        # The others keep polling while one leaves, as applications would.
        leaving, rest = consumers[0], consumers[1:]
        pollers = [asyncio.create_task(_poll_forever(c)) for c in rest]
        started = time.monotonic()
        await leaving.close()
        for task in pollers:
            task.cancel()
        await asyncio.gather(*pollers, return_exceptions=True)
        await _wait_for_cover(rest, partitions)
        left = time.monotonic() - started
        return joined, left
    finally:
        for c in consumers:
            await c.close(timeout_ms=2000)


def measure(broker: str, members: int, partitions: int, rounds: int) -> dict[str, Any]:
    if broker == "brook-delay-0":
        context = brook_broker({"group.initial.rebalance.delay.ms": "0"})
    else:
        context = BROKERS[broker]()
    joins, leaves = [], []
    with context as bootstrap:
        for _ in range(rounds):
            joined, left = asyncio.run(one_round(bootstrap, members, partitions))
            joins.append(joined)
            leaves.append(left)
            print(f"  {broker}: join {joined:.3f} s, settle after a leave {left:.3f} s")
    return {
        "join_s": joins,
        "leave_s": leaves,
        "join_median": median(joins),
        "leave_median": median(leaves),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = {
        name: measure(name, args.members, args.partitions, args.rounds)
        for name in ("brook", "brook-delay-0", "tansu")
    }
    tansu = results["tansu"]
    print(
        f"\n{args.members} members, {args.partitions} partitions, {args.rounds} rounds "
        "(medians, seconds)"
    )
    print(f"{'broker':<28}{'join':>8}{'leave':>8}{'join / tansu':>14}{'leave / tansu':>15}")
    for name, r in results.items():
        print(
            f"{name:<28}{r['join_median']:>8.3f}{r['leave_median']:>8.3f}"
            f"{r['join_median'] / tansu['join_median']:>14.2f}"
            f"{r['leave_median'] / tansu['leave_median']:>15.2f}"
        )
    path = save(
        "group_rebalance",
        {"machine": machine(), "args": vars(args), "consumer": CONSUMER, "results": results},
    )
    print(f"\nsaved {path}")


if __name__ == "__main__":
    main()
