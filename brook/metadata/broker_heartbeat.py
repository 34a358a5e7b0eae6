"""Broker sessions on the active controller, as KRaft's BrokerHeartbeatManager keeps them.

Pure state driven with ``now_ms``: each registered broker's last contact, the metadata offset
it last reported, and its controlled-shutdown offset. ``next_state`` is the table of KIP-631
(a fenced broker is unfenced once it has caught up to its own registration, a broker asking
to shut down moves its leaderships away first, and is told to stop once every active broker
has seen that move); ``stale_broker`` finds a broker whose session expired.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .controller_api import BrokerHeartbeat


class BrokerState(enum.Enum):
    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    SHUTDOWN_NOW = "shutdown_now"

    @property
    def fenced(self) -> bool:
        return self in (BrokerState.FENCED, BrokerState.SHUTDOWN_NOW)


@dataclass(slots=True)
class Session:
    broker_id: int
    last_contact_ms: int
    metadata_offset: int = -1
    fenced: bool = True
    controlled_shutdown_offset: int = -1  # -1: not shutting down

    @property
    def shutting_down(self) -> bool:
        return self.controlled_shutdown_offset >= 0


class BrokerHeartbeatManager:
    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.sessions: dict[int, Session] = {}

    def reset(self, brokers: dict[int, tuple[bool, bool]], now_ms: int) -> None:
        """A newly active controller: every registered broker (id -> (fenced, shutting
        down)) gets a fresh session, so a failover fences no one."""
        self.sessions = {
            b: Session(b, now_ms, fenced=fenced, controlled_shutdown_offset=0 if down else -1)
            for b, (fenced, down) in brokers.items()
        }

    def register(self, broker_id: int, now_ms: int) -> None:
        self.sessions[broker_id] = Session(broker_id, now_ms)

    def remove(self, broker_id: int) -> None:
        self.sessions.pop(broker_id, None)

    def touch(self, broker_id: int, now_ms: int, fenced: bool, metadata_offset: int) -> None:
        session = self.sessions.get(broker_id)
        if session is None:
            session = self.sessions[broker_id] = Session(broker_id, now_ms)
        session.last_contact_ms = now_ms
        session.fenced = fenced
        session.metadata_offset = metadata_offset
        if fenced:
            session.controlled_shutdown_offset = -1

    def fence(self, broker_id: int) -> None:
        session = self.sessions.get(broker_id)
        if session is not None:
            session.fenced = True
            session.controlled_shutdown_offset = -1

    def start_controlled_shutdown(self, broker_id: int, offset: int) -> None:
        session = self.sessions.get(broker_id)
        if session is not None and not session.shutting_down:
            session.controlled_shutdown_offset = offset

    def next_state(
        self, request: BrokerHeartbeat, registration_offset: int, has_leaderships: bool
    ) -> tuple[BrokerState, BrokerState]:
        """(current, next) for a heartbeat."""
        session = self.sessions.get(request.broker_id)
        if session is None or session.fenced:
            if request.want_shutdown:
                return BrokerState.FENCED, BrokerState.SHUTDOWN_NOW
            if not request.want_fence and request.current_metadata_offset >= registration_offset:
                return BrokerState.FENCED, BrokerState.UNFENCED
            return BrokerState.FENCED, BrokerState.FENCED
        if not session.shutting_down:
            if request.want_shutdown:
                nxt = (
                    BrokerState.CONTROLLED_SHUTDOWN if has_leaderships else BrokerState.SHUTDOWN_NOW
                )
                return BrokerState.UNFENCED, nxt
            if request.want_fence:
                return BrokerState.UNFENCED, BrokerState.FENCED
            return BrokerState.UNFENCED, BrokerState.UNFENCED
        if has_leaderships or session.controlled_shutdown_offset > self.lowest_active_offset(
            exclude=request.broker_id
        ):
            return BrokerState.CONTROLLED_SHUTDOWN, BrokerState.CONTROLLED_SHUTDOWN
        return BrokerState.CONTROLLED_SHUTDOWN, BrokerState.SHUTDOWN_NOW

    def lowest_active_offset(self, exclude: int) -> int:
        """The lowest metadata offset reported by an active (unfenced, not shutting down)
        broker other than ``exclude``; a large number when there is none."""
        offsets = [
            s.metadata_offset
            for s in self.sessions.values()
            if s.broker_id != exclude and not s.fenced and not s.shutting_down
        ]
        return min(offsets) if offsets else 2**63 - 1

    def stale_broker(self, now_ms: int) -> int | None:
        """An unfenced broker whose session expired, the longest-silent first."""
        expired = [
            s
            for s in self.sessions.values()
            if not s.fenced and now_ms - s.last_contact_ms > self.session_timeout_ms
        ]
        if not expired:
            return None
        return min(expired, key=lambda s: s.last_contact_ms).broker_id

    def next_expiry_ms(self) -> int | None:
        unfenced = [s.last_contact_ms for s in self.sessions.values() if not s.fenced]
        return min(unfenced) + self.session_timeout_ms + 1 if unfenced else None
