"""KIP-227 fetch sessions through a real broker: full and incremental fetches, idle partitions
left out of incremental responses, forgotten partitions, errors 70 and 71."""

from __future__ import annotations

from typing import Any

from rawclient import RawClient, create_topic, produce
from support import BrookProcess

from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch


def _fetch(
    c: RawClient,
    session_id: int,
    epoch: int,
    parts: dict[tuple[str, int], int],
    forgotten: list[tuple[str, int]] = (),
) -> Any:  # type: ignore[assignment]
    topics: dict[str, list[dict[str, int]]] = {}
    for (topic, p), offset in parts.items():
        topics.setdefault(topic, []).append(
            {
                "partition": p,
                "current_leader_epoch": -1,
                "fetch_offset": offset,
                "last_fetched_epoch": -1,
                "log_start_offset": -1,
                "partition_max_bytes": 1 << 20,
            }
        )
    forget: dict[str, list[int]] = {}
    for topic, p in forgotten:
        forget.setdefault(topic, []).append(p)
    return c.request(
        1,
        12,
        {
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": session_id,
            "session_epoch": epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [{"topic": t, "partitions": ps} for t, ps in forget.items()],
            "rack_id": "",
        },
    )


def _names(resp: Any) -> set[tuple[str, int]]:
    return {(t.topic, p.partition_index) for t in resp.responses for p in t.partitions}


def test_incremental_fetch_omits_idle_partitions(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook_session.bootstrap) as c:
        create_topic(c, unique_topic, partitions=4)
        wanted = {(unique_topic, p): 0 for p in range(4)}
        full = _fetch(c, 0, 0, wanted)
        assert full.error_code == 0 and full.session_id > 0
        assert _names(full) == set(wanted)
        sid = full.session_id
        idle = _fetch(c, sid, 1, {})
        assert idle.error_code == 0 and idle.session_id == sid
        assert _names(idle) == set()  # nothing changed, nothing sent
        produce(c, unique_topic, 2, build_simple_batch([b"x"]))
        changed = _fetch(c, sid, 2, {})
        assert _names(changed) == {(unique_topic, 2)}
        part = changed.responses[0].partitions[0]
        assert part.high_watermark == 1 and part.records
        moved = _fetch(c, sid, 3, {(unique_topic, 2): 1}, forgotten=[(unique_topic, 0)])
        assert _names(moved) == set()
        produce(c, unique_topic, 0, build_simple_batch([b"y"]))
        assert _names(_fetch(c, sid, 4, {})) == set()  # partition 0 was forgotten
        stale = _fetch(c, sid, 2, {})
        assert stale.error_code == Errors.INVALID_FETCH_SESSION_EPOCH
        unknown = _fetch(c, 2**31 - 7, 1, {})
        assert unknown.error_code == Errors.FETCH_SESSION_ID_NOT_FOUND
        sessionless = _fetch(c, 0, -1, wanted)
        assert sessionless.session_id == 0 and _names(sessionless) == set(wanted)


def test_no_sessions_when_the_cache_has_no_slots(tmp_path: Any, unique_topic: str) -> None:
    with (
        BrookProcess(tmp_path / "d", {"max.incremental.fetch.session.cache.slots": "0"}) as b,
        RawClient(b.bootstrap) as c,
    ):
        create_topic(c, unique_topic)
        resp = _fetch(c, 0, 0, {(unique_topic, 0): 0})
        assert resp.error_code == 0 and resp.session_id == 0
