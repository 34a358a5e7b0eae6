"""A leader's ISR updates are reported once committed, whichever tells first: the
controller's answer or the metadata image (the answer then comes for an update the leader has
left); a change the controller made on its own is not the leader's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brook.broker.leader_state import IsrUpdate, Kind
from brook.broker.partition import Partition
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata.image import BrokerInfo, PartitionInfo
from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch

NOW = 1_700_000_000_000
TOPIC_ID = uuid.uuid4()


def _info(epoch: int, partition_epoch: int, isr: tuple[int, ...]) -> PartitionInfo:
    return PartitionInfo(TOPIC_ID, 0, (1, 2), isr, 1, epoch, partition_epoch)


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[tuple[Partition, list[IsrUpdate], list[IsrUpdate]]]:
    plog = PartitionLog.open(tmp_path / "t-0", LogConfig.from_topic_config({}), now_ms=NOW)
    sent: list[IsrUpdate] = []
    committed: list[IsrUpdate] = []
    p = Partition("t", 0, TOPIC_ID, 1, plog)
    p.submit_isr_update = lambda _p, u: sent.append(u)
    p.isr_committed = committed.append
    p.broker = lambda b: BrokerInfo(b, 10 + b, uuid.uuid4(), (), None, False)
    p.update(_info(0, 0, (1,)))
    p.append_as_leader(build_simple_batch([b"v"] * 4, timestamp=NOW), 1, NOW)
    yield p, sent, committed
    plog.close_files()


def _expand(p: Partition, sent: list[Any]) -> IsrUpdate:
    p.record_follower_fetch(2, 4, 0, 12)
    assert len(sent) == 1 and sent[0].kind is Kind.EXPAND
    return sent[0]


def test_committed_by_the_answer(leader: Any) -> None:
    p, sent, committed = leader
    update = _expand(p, sent)
    assert committed == []
    p.on_isr_reply(update, Errors.NONE, leader_epoch=0, partition_epoch=1, isr=(1, 2))
    assert committed == [update]


def test_committed_by_the_image_before_the_answer_counts_once(leader: Any) -> None:
    p, sent, committed = leader
    update = _expand(p, sent)
    p.update(_info(0, 1, (1, 2)))  # the PartitionChangeRecord applied first
    assert committed == [update]
    p.on_isr_reply(update, Errors.NONE, leader_epoch=0, partition_epoch=1, isr=(1, 2))
    assert committed == [update]


def test_a_refused_update_is_not_committed(leader: Any) -> None:
    p, sent, committed = leader
    update = _expand(p, sent)
    p.on_isr_reply(update, Errors.INVALID_UPDATE_VERSION)
    assert committed == []


def test_a_change_made_by_the_controller_is_not_the_leaders(leader: Any) -> None:
    p, _, committed = leader
    p.update(_info(0, 1, (1,)))  # e.g. the controller fenced a broker out of the ISR
    assert committed == []
