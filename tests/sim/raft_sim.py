"""A deterministic simulation of Brook's Raft quorum: real ``RaftCore`` nodes over in-memory
logs and quorum-state stores, a simulated clock and event queue, a network that drops, delays,
duplicates and reorders messages and partitions nodes (one-way too), crashes and restarts that
keep only what was flushed and persisted, observers that lose everything, leaders appending at
random times, snapshots at random committed offsets with the log below deleted. Everything,
from the cluster's size to each message's delay, follows from ONE integer seed.

Invariants are checked after every step (and every quorum-state write):

* at most one leader per epoch, ever; persisted epochs never decrease; a granted vote is
  persisted before its response leaves the node;
* the records each node's listener applies as committed are the same on every node, offset by
  offset, and a snapshot's content matches the prefix it claims (nothing committed changes);
* each node's high watermark never moves back (it starts unknown after a restart);
* a majority of voters holds the leader's high watermark durably (flushed log end >= HW);
* liveness: after the faults stop, a leader is elected and commits a new append within
  ``LIVENESS_MS`` of simulated time, and its log still holds every committed record.

Replay one schedule with its trace::

    python tests/sim/raft_sim.py --seed 1234 --verbose
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from brook.raft.actions import (
    Action,
    CommitTo,
    LeaderChanged,
    Respond,
    Send,
    ShutdownComplete,
    SnapshotInstalled,
)
from brook.raft.config import RaftConfig
from brook.raft.core import RaftCore
from brook.raft.memory_log import MemoryBatch, MemoryLog
from brook.raft.messages import OffsetAndEpoch, Request, Response, VoteRequest, VoteResponse
from brook.raft.quorum_state import ElectionState, MemoryQuorumStateStore
from brook.raft.request_manager import NEVER

CLUSTER_ID = "sim-cluster"
CONFIG = RaftConfig()
LIVENESS_MS = 20_000

_TIMER, _REQUEST, _RESPONSE, _SEND_FAIL, _CALL = range(5)


class Violation(AssertionError):
    """A safety or liveness property failed; the message names the seed to replay."""


def replay_command(seed: int) -> str:
    return f"python tests/sim/raft_sim.py --seed {seed} --verbose"


@dataclass
class Scenario:
    """The knobs one seed draws."""

    seed: int
    voters: int
    observers: int
    chaos_ms: int
    drop: float
    duplicate: float
    spike: float  # chance a message is delayed by up to ``spike_ms`` (reordering)
    spike_ms: int
    faults: int
    append_every_ms: tuple[int, int]
    snapshot_every_ms: tuple[int, int]
    crash_after: float  # chance a node crashes right after any step it takes
    crash_on_vote: float  # chance a voter crashes right after granting a vote
    latency_ms: tuple[int, int]
    fetch_max_bytes: int  # small values make followers catch up (and download) in pieces
    snapshot_padding: int

    @classmethod
    def from_seed(cls, seed: int) -> Scenario:
        rng = random.Random(seed)
        return cls(
            seed=seed,
            voters=rng.choice((1, 2, 3, 3, 3, 4, 5, 5)),
            observers=rng.choice((0, 0, 1, 1, 2)),
            chaos_ms=rng.randint(1500, 6000),
            drop=rng.choice((0.0, 0.0, 0.02, 0.1, 0.3)),
            duplicate=rng.choice((0.0, 0.0, 0.05, 0.2)),
            spike=rng.choice((0.0, 0.05, 0.2)),
            spike_ms=rng.choice((100, 500, 2500)),
            faults=rng.randint(0, 8),
            append_every_ms=rng.choice(((20, 120), (50, 400), (200, 900))),
            snapshot_every_ms=rng.choice(((200, 800), (500, 2000), (NEVER, NEVER))),
            crash_after=rng.choice((0.0, 0.0, 0.003, 0.02)),
            crash_on_vote=rng.choice((0.0, 0.0, 0.3, 1.0)),
            latency_ms=rng.choice(((1, 15), (1, 15), (5, 80), (20, 300))),
            fetch_max_bytes=rng.choice((CONFIG.fetch_max_bytes, CONFIG.fetch_max_bytes, 400, 150)),
            snapshot_padding=rng.choice((0, 40, 400)),
        )


class _CheckedStore(MemoryQuorumStateStore):
    """The quorum-state store of one node; every write is checked as it happens."""

    def __init__(self, sim: Simulation, node: SimNode) -> None:
        super().__init__()
        self._sim = sim
        self._node = node

    def write(self, state: ElectionState) -> None:
        self._sim.check_persisted(self._node, state)
        super().write(state)


@dataclass(eq=False)
class SimNode:
    id: int
    is_voter: bool
    log: MemoryLog = field(default_factory=MemoryLog)
    store: MemoryQuorumStateStore | None = None
    core: RaftCore | None = None
    incarnation: int = 0
    timer_at: int = NEVER
    timer_gen: int = 0
    persisted_epoch: int = -1
    # the state machine this node's listener built from what it was told is committed
    hw: int | None = None
    applied: int = 0
    state_hash: int = 0
    hashes: dict[int, int] = field(default_factory=dict)
    stopping: bool = False

    @property
    def up(self) -> bool:
        return self.core is not None


class Simulation:
    def __init__(self, seed: int, trace: bool = False) -> None:
        self.seed = seed
        self.scenario = sc = Scenario.from_seed(seed)
        self.config = RaftConfig(fetch_max_bytes=sc.fetch_max_bytes)
        self.rng = random.Random(seed * 7919 + 1)
        self.now = 0
        self.trace: list[str] | None = [] if trace else None
        self._queue: list[tuple] = []
        self._seq = 0
        voter_ids = list(range(1, sc.voters + 1))
        self.voters = tuple(voter_ids)
        self.majority = len(voter_ids) // 2 + 1
        self.nodes: dict[int, SimNode] = {}
        for nid in voter_ids:
            self.nodes[nid] = SimNode(nid, True)
        for i in range(sc.observers):
            nid = 100 + i
            self.nodes[nid] = SimNode(nid, False)
        for node in self.nodes.values():
            node.store = _CheckedStore(self, node)
        self.blocked: set[tuple[int, int]] = set()
        self.drop = sc.drop
        self.duplicate = sc.duplicate
        self.spike = sc.spike
        self.latency = sc.latency_ms
        self.healed = False
        # what every listener agrees is committed: record identity and prefix hash per offset
        self.committed: list[tuple] = []
        self.prefix_hash: list[int] = [0]
        self.leaders: dict[int, int] = {}
        self.appended = 0
        self.heal_appends: list[tuple[int, int, int]] = []  # (node, epoch, offset)
        self.live: SimNode | None = None
        self.steps = 0

    # ------------------------------------------------------------------ plumbing
    def _push(self, at: int, kind: int, *args: object) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (at, self._seq, kind, *args))

    def log(self, text: str) -> None:
        if self.trace is not None:
            self.trace.append(f"{self.now:>7} {text}")

    def fail(self, text: str) -> None:
        raise Violation(
            f"seed {self.seed} at {self.now} ms: {text}\n  replay: {replay_command(self.seed)}"
        )

    def _delay(self) -> int:
        rng = self.rng
        if self.spike and rng.random() < self.spike:
            return rng.randint(1, self.scenario.spike_ms)
        return rng.randint(*self.latency)

    # ------------------------------------------------------------------ nodes
    def start_node(self, node: SimNode) -> None:
        node.incarnation += 1
        node.stopping = False
        node.hw = None
        node.applied = 0
        node.state_hash = 0
        node.hashes = {}
        node.timer_at = NEVER
        node_rng = random.Random(self.seed * 1_000_003 + node.id * 101 + node.incarnation)
        assert node.store is not None
        node.core = RaftCore(
            node.id, self.voters, CLUSTER_ID, self.config, node.log, node.store, node_rng, self.now
        )
        self.log(f"node {node.id} starts ({node.core.role!r})")
        self._run(node, node.core.poll(self.now))

    def crash_node(self, node: SimNode, *, wipe: bool = False, clean: bool = False) -> None:
        if not node.up:
            return
        if clean:
            node.log.flush()
        node.core = None
        node.log = node.log.crashed()
        if wipe:
            node.log = MemoryLog()
            node.store = _CheckedStore(self, node)
            node.persisted_epoch = -1
        what = "stops" if clean else "crashes"
        self.log(f"node {node.id} {what}{' and loses its disk' if wipe else ''}")

    # ------------------------------------------------------------------ network
    def _send(self, src: SimNode, dst_id: int, request: Request) -> None:
        dst = self.nodes.get(dst_id)
        if dst is None:
            self.fail(f"node {src.id} sent {type(request).__name__} to unknown node {dst_id}")
        if (src.id, dst_id) in self.blocked:
            return
        if not dst.up:
            # connection refused, quickly
            self._push(
                self.now + self.rng.randint(1, 10),
                _SEND_FAIL,
                src.id,
                src.incarnation,
                dst_id,
                request,
            )
            return
        rng = self.rng
        if self.drop and rng.random() < self.drop:
            return
        self._push(
            self.now + self._delay(),
            _REQUEST,
            src.id,
            src.incarnation,
            dst_id,
            dst.incarnation,
            request,
        )
        if self.duplicate and rng.random() < self.duplicate:
            self._push(
                self.now + self._delay(),
                _REQUEST,
                src.id,
                src.incarnation,
                dst_id,
                dst.incarnation,
                request,
            )

    def _respond(self, src: SimNode, dst_id: int, request: Request, response: Response) -> None:
        # a response reaching a restarted node is ignored by its core (not its request)
        dst = self.nodes[dst_id]
        if (src.id, dst_id) in self.blocked or not dst.up:
            return
        dst_inc = dst.incarnation
        rng = self.rng
        if self.drop and rng.random() < self.drop:
            return
        self._push(self.now + self._delay(), _RESPONSE, src.id, dst_id, dst_inc, request, response)
        if self.duplicate and rng.random() < self.duplicate:
            self._push(
                self.now + self._delay(), _RESPONSE, src.id, dst_id, dst_inc, request, response
            )

    # ------------------------------------------------------------------ actions
    def _run(self, node: SimNode, actions: list[Action]) -> None:
        granted_vote = False
        for action in actions:
            kind = type(action)
            if kind is Send:
                self._send(node, action.destination, action.request)
            elif kind is Respond:
                self._respond(node, action.destination, action.request, action.response)
                response = action.response
                if type(response) is VoteResponse and response.vote_granted:
                    request = action.request
                    assert isinstance(request, VoteRequest)
                    if not request.pre_vote:
                        granted_vote = True
                        self.check_vote_persisted(node, request)
            elif kind is CommitTo:
                self.on_commit(node, action.high_watermark)
            elif kind is SnapshotInstalled:
                self.on_snapshot_installed(node, action.snapshot_id)
            elif kind is LeaderChanged:
                self.on_leader_changed(node, action)
            elif kind is ShutdownComplete:
                self.log(f"node {node.id} shutdown complete (timed out: {action.timed_out})")
                node.stopping = False
                self.crash_node(node, clean=True)
                self._push(self.now + self.rng.randint(100, 1500), _CALL, self._restart_fn(node))
                return
        core = node.core
        if granted_vote and not self.healed and self.rng.random() < self.scenario.crash_on_vote:
            # the vote left the machine; whatever was not persisted is gone with it
            self.crash_node(node)
            self._push(self.now + self.rng.randint(5, 300), _CALL, self._restart_fn(node))
            return
        if core is not None:
            at = core.next_poll_ms
            if at != node.timer_at:
                node.timer_at = at
                node.timer_gen += 1
                if at < NEVER:
                    self._push(at, _TIMER, node.id, node.incarnation, node.timer_gen)

    def _restart_fn(self, node: SimNode) -> Callable[[], None]:
        def restart() -> None:
            if not node.up:
                self.start_node(node)

        return restart

    # ------------------------------------------------------------------ the listener
    def on_leader_changed(self, node: SimNode, action: LeaderChanged) -> None:
        self.log(f"node {node.id} sees leader {action.leader_id} in epoch {action.epoch}")
        if action.leader_id == node.id:
            self._claim_leadership(action.epoch, node.id)

    def _claim_leadership(self, epoch: int, node_id: int) -> None:
        current = self.leaders.setdefault(epoch, node_id)
        if current != node_id:
            self.fail(f"two leaders in epoch {epoch}: {current} and {node_id}")

    def check_persisted(self, node: SimNode, state: ElectionState) -> None:
        if state.epoch < node.persisted_epoch:
            self.fail(f"node {node.id} persisted epoch {state.epoch} after {node.persisted_epoch}")
        node.persisted_epoch = state.epoch
        if state.leader_id >= 0:
            self._claim_leadership(state.epoch, state.leader_id)

    def check_vote_persisted(self, node: SimNode, request: VoteRequest) -> None:
        """A granted vote must be on disk before the response leaves the node."""
        assert node.store is not None
        state = node.store.read()
        if (
            state is None
            or state.epoch != request.replica_epoch
            or state.voted_id != request.replica_id
        ):
            self.fail(
                f"node {node.id} granted its vote in epoch {request.replica_epoch} to "
                f"{request.replica_id} but persisted {state}"
            )

    def _load_snapshot(self, node: SimNode, snapshot_id: OffsetAndEpoch) -> None:
        content = node.log.snapshot_content(snapshot_id)
        offset_text, hash_text = content.decode().split(":")[:2]
        offset, state_hash = int(offset_text), int(hash_text)
        if offset != snapshot_id.offset:
            self.fail(f"node {node.id}: snapshot {snapshot_id} holds the state at {offset}")
        if offset >= len(self.prefix_hash) or self.prefix_hash[offset] != state_hash:
            self.fail(f"node {node.id}: snapshot {snapshot_id} does not match the committed prefix")
        node.applied = offset
        node.state_hash = state_hash
        node.hashes = {offset: state_hash}
        self.log(f"node {node.id} loads snapshot {snapshot_id.offset}/{snapshot_id.epoch}")

    def on_snapshot_installed(self, node: SimNode, snapshot_id: OffsetAndEpoch) -> None:
        self._load_snapshot(node, snapshot_id)

    def on_commit(self, node: SimNode, hw: int) -> None:
        if node.hw is not None and hw < node.hw:
            self.fail(f"node {node.id}: high watermark moved back from {node.hw} to {hw}")
        node.hw = hw
        log = node.log
        if node.applied < log.start_offset or (node.applied == 0 and log.latest_snapshot_id()):
            latest = log.latest_snapshot_id()
            if latest is None:
                self.fail(f"node {node.id}: log starts at {log.start_offset} without a snapshot")
            if latest.offset > node.applied:
                self._load_snapshot(node, latest)
        committed, prefix = self.committed, self.prefix_hash
        offset = node.applied
        while offset < hw:
            batches = log.read(offset, 1 << 30)
            if not batches:
                self.fail(f"node {node.id}: committed offset {offset} is not in its log")
            for batch in batches:
                assert isinstance(batch, MemoryBatch)
                change = batch.leader_change
                for i, payload in enumerate(batch.records):
                    at = batch.base_offset + i
                    if at < offset:
                        continue
                    if at >= hw:
                        break
                    ident = (
                        (batch.epoch, payload)
                        if change is None
                        else ("leader", batch.epoch, change.leader_id)
                    )
                    if at < len(committed):
                        if committed[at] != ident:
                            self.fail(
                                f"node {node.id} commits {ident} at {at}, "
                                f"where {committed[at]} was committed"
                            )
                    elif at == len(committed):
                        committed.append(ident)
                        prefix.append(hash((prefix[-1], ident)))
                    else:
                        self.fail(f"node {node.id} commits offset {at} past the committed prefix")
                    node.state_hash = prefix[at + 1]
                    node.hashes[at + 1] = node.state_hash
                offset = min(batch.next_offset, hw)
                if offset >= hw:
                    break
        node.applied = max(node.applied, hw)

    # ------------------------------------------------------------------ invariants after a step
    def check_step(self) -> None:
        for node in self.nodes.values():
            core = node.core
            if core is None or not core.is_leader:
                continue
            self._claim_leadership(core.epoch, node.id)
            hw = core.high_watermark
            if hw is None:
                continue
            holding = sum(1 for v in self.voters if self.nodes[v].log.flushed_offset >= hw)
            if holding < self.majority:
                self.fail(
                    f"leader {node.id} has high watermark {hw} but only {holding} voters hold it"
                )
            if self.healed:
                for nid, epoch, offset in self.heal_appends:
                    if nid == node.id and epoch == core.epoch and hw > offset:
                        self.live = node

    def check_final(self) -> None:
        """The leader that showed liveness still holds every committed record."""
        leader = self.live
        assert leader is not None
        log = leader.log
        start = log.start_offset
        if start > 0:
            earliest = log.earliest_snapshot_id()
            if earliest is None:
                self.fail(f"leader {leader.id}: log starts at {start} without a snapshot")
            content = log.snapshot_content(earliest).decode().split(":")[:2]
            if start >= len(self.prefix_hash) or content != [
                str(start),
                str(self.prefix_hash[start]),
            ]:
                self.fail(f"leader {leader.id}: its snapshot at {start} lost committed records")
        for batch in log.read(start, 1 << 30):
            assert isinstance(batch, MemoryBatch)
            for i, payload in enumerate(batch.records):
                at = batch.base_offset + i
                if at >= len(self.committed):
                    return
                change = batch.leader_change
                ident = (
                    (batch.epoch, payload)
                    if change is None
                    else ("leader", batch.epoch, change.leader_id)
                )
                if self.committed[at] != ident:
                    self.fail(
                        f"leader {leader.id} holds {ident} at {at}, "
                        f"where {self.committed[at]} was committed"
                    )
        if log.end_offset < len(self.committed):
            self.fail(f"leader {leader.id} lost committed records from {log.end_offset}")

    # ------------------------------------------------------------------ the workload and the faults
    def _schedule_faults(self) -> None:
        sc, rng = self.scenario, self.rng
        for _ in range(sc.faults):
            at = rng.randint(0, sc.chaos_ms)
            self._push(at, _CALL, self._fault_fn(rng.random(), rng.randint(0, 10**9)))
        self._push(rng.randint(*sc.append_every_ms), _CALL, self._append)
        if sc.snapshot_every_ms[0] < NEVER:
            self._push(rng.randint(*sc.snapshot_every_ms), _CALL, self._snapshot)
        self._push(sc.chaos_ms, _CALL, self._heal)

    def _fault_fn(self, pick: float, salt: int) -> Callable[[], None]:
        def fault() -> None:
            if self.healed:
                return
            rng = random.Random(salt)
            nodes = list(self.nodes.values())
            leader = next((n for n in nodes if n.core is not None and n.core.is_leader), None)
            duration = rng.randint(100, 3000)
            if pick < 0.22:
                node = leader if leader is not None and rng.random() < 0.6 else rng.choice(nodes)
                self.crash_node(node)
                self._push(self.now + duration, _CALL, self._restart_fn(node))
            elif pick < 0.42:
                node = leader if leader is not None and rng.random() < 0.5 else rng.choice(nodes)
                self._isolate(node.id, duration, one_way=rng.random() < 0.3)
            elif pick < 0.5:
                self._split(rng, duration)
            elif pick < 0.55:
                # every node alone long enough for every timer to fire, then all at once back:
                # a crowd of candidates in the same epoch
                pairs = {(a, b) for a in self.nodes for b in self.nodes if a != b}
                self._block(pairs, rng.randint(2500, 5000), "every node is cut off")
            elif pick < 0.63:
                observers = [n for n in nodes if not n.is_voter]
                if observers:
                    node = rng.choice(observers)
                    self.crash_node(node, wipe=True)
                    self._push(self.now + duration, _CALL, self._restart_fn(node))
            elif pick < 0.73:
                if leader is not None:
                    self.log(f"node {leader.id} resigns")
                    self._run(leader, leader.core.resign(self.now))  # type: ignore[union-attr]
            elif pick < 0.81:
                if leader is not None and not leader.stopping:
                    self.log(f"node {leader.id} shuts down gracefully")
                    leader.stopping = True
                    self._run(leader, leader.core.shutdown(self.now, 5000))  # type: ignore[union-attr]
            elif pick < 0.9:
                old = self.drop
                self.drop = max(self.drop, 0.5)
                self.log("the network loses half its messages")

                def restore() -> None:
                    if not self.healed:
                        self.drop = old

                self._push(self.now + duration, _CALL, restore)
            else:
                # a whole-cluster crash
                for node in nodes:
                    self.crash_node(node)
                    self._push(self.now + rng.randint(10, 800), _CALL, self._restart_fn(node))

        return fault

    def _maybe_crash_after(self, node: SimNode) -> None:
        """Crash a node right after it acted (a vote granted, a record appended, a response
        sent): the moments where a missing fsync or persist shows."""
        p = self.scenario.crash_after
        if p and not self.healed and node.up and self.rng.random() < p:
            self.crash_node(node)
            self._push(self.now + self.rng.randint(5, 400), _CALL, self._restart_fn(node))

    def _isolate(self, nid: int, duration: int, one_way: bool) -> None:
        pairs = set()
        for other in self.nodes:
            if other != nid:
                pairs.add((other, nid))
                if not one_way:
                    pairs.add((nid, other))
        self._block(pairs, duration, f"node {nid} is cut off{' (inbound only)' if one_way else ''}")

    def _split(self, rng: random.Random, duration: int) -> None:
        ids = list(self.nodes)
        rng.shuffle(ids)
        cut = rng.randint(1, max(1, len(ids) - 1))
        left, right = ids[:cut], ids[cut:]
        pairs = {(a, b) for a in left for b in right} | {(b, a) for a in left for b in right}
        self._block(pairs, duration, f"partition {sorted(left)} | {sorted(right)}")

    def _block(self, pairs: set[tuple[int, int]], duration: int, text: str) -> None:
        new = pairs - self.blocked
        self.blocked |= new
        self.log(text)

        def unblock() -> None:
            self.blocked -= new

        self._push(self.now + duration, _CALL, unblock)

    def _append(self) -> None:
        for node in self.nodes.values():
            core = node.core
            if core is not None and core.is_leader:
                self.appended += 1
                count = 1 if self.rng.random() < 0.7 else self.rng.randint(2, 4)
                payloads = [f"r{self.appended}.{i}".encode() for i in range(count)]
                result = core.append(payloads, self.now)
                if result.error == 0:
                    self.log(f"node {node.id} appends {result.base_offset}-{result.last_offset}")
                    if self.healed:
                        self.heal_appends.append((node.id, result.epoch, result.last_offset))
                self._run(node, result.actions)
        self._push(self.now + self.rng.randint(*self.scenario.append_every_ms), _CALL, self._append)

    def _snapshot(self) -> None:
        candidates = [
            n for n in self.nodes.values() if n.core is not None and n.core.high_watermark
        ]
        if candidates:
            node = self.rng.choice(candidates)
            log = node.log
            limit = min(node.applied, node.core.high_watermark or 0)  # type: ignore[union-attr]
            latest = log.latest_snapshot_id()
            low = max(log.start_offset, latest.offset if latest is not None else 0)
            bounds = [
                b.next_offset
                for b in log.batches()
                if low < b.next_offset <= limit and b.next_offset in node.hashes
            ]
            if bounds:
                end = self.rng.choice(bounds)
                padding = "x" * self.rng.randint(0, self.scenario.snapshot_padding)
                content = f"{end}:{node.hashes[end]}:{padding}".encode()
                assert node.core is not None
                snapshot_id = node.core.create_snapshot(end, content)
                self.log(f"node {node.id} snapshots at {snapshot_id.offset}/{snapshot_id.epoch}")
                if self.rng.random() < 0.7 and node.core.delete_log_before_snapshot():
                    self.log(f"node {node.id} deletes its log below {log.start_offset}")
        low, high = self.scenario.snapshot_every_ms
        self._push(self.now + self.rng.randint(low, high), _CALL, self._snapshot)

    def _heal(self) -> None:
        self.healed = True
        self.heal_at = self.now
        self.blocked.clear()
        self.drop = 0.0
        self.duplicate = 0.0
        self.spike = 0.0
        self.latency = (1, 15)
        self.log("the network heals; every node is brought back")
        for node in self.nodes.values():
            if not node.up:
                self.start_node(node)

    # ------------------------------------------------------------------ the loop
    def run(self) -> Simulation:
        for node in self.nodes.values():
            self._push(self.rng.randint(0, 200), _CALL, self._restart_fn(node))
        self._schedule_faults()
        queue = self._queue
        nodes = self.nodes
        deadline = self.scenario.chaos_ms + LIVENESS_MS
        while queue:
            event = heapq.heappop(queue)
            self.now = at = event[0]
            if at > deadline:
                break
            kind = event[2]
            if kind == _TIMER:
                node = nodes[event[3]]
                if node.core is None or event[4] != node.incarnation or event[5] != node.timer_gen:
                    continue
                node.timer_at = NEVER
                self._run(node, node.core.poll(at))
                self._maybe_crash_after(node)
            elif kind == _REQUEST:
                src_id, _, dst_id, dst_inc, request = event[3:]
                dst = nodes[dst_id]
                # a request a crashed sender sent may still arrive; its answer finds nobody
                if dst.core is None or dst.incarnation != dst_inc:
                    continue
                if self.trace is not None:
                    self.log(f"node {dst_id} <- {src_id}: {_brief(request)}")
                self._run(dst, dst.core.handle_request(src_id, request, at))
                self._maybe_crash_after(dst)
            elif kind == _RESPONSE:
                src_id, dst_id, dst_inc, request, response = event[3:]
                dst = nodes[dst_id]
                if dst.core is None or dst.incarnation != dst_inc:
                    continue
                if self.trace is not None:
                    self.log(f"node {dst_id} <- {src_id}: {_brief(response)}")
                self._run(dst, dst.core.handle_response(src_id, request, response, at))
                self._maybe_crash_after(dst)
            elif kind == _SEND_FAIL:
                src_id, src_inc, dst_id, request = event[3:]
                src = nodes[src_id]
                if src.core is None or src.incarnation != src_inc:
                    continue
                self._run(src, src.core.handle_send_failure(dst_id, request, at))
            else:
                event[3]()
            self.steps += 1
            self.check_step()
            if self.live is not None:
                self.check_final()
                return self
        self.fail(
            f"no leader committed a new append within {LIVENESS_MS} ms after the faults stopped"
        )
        return self


def _brief(message: object) -> str:
    """A message for the trace, without the fields every message repeats."""
    text = repr(message)
    for noise in (", topic='__cluster_metadata', partition=0", "cluster_id='sim-cluster', "):
        text = text.replace(noise, "")
    if isinstance(getattr(message, "records", None), tuple) and message.records:  # type: ignore[attr-defined]
        batches = message.records  # type: ignore[attr-defined]
        text = text.split(", records=")[0] + f", records=<{len(batches)} batches>)"
    return text if len(text) <= 220 else text[:217] + "..."


def run_seed(seed: int, trace: bool = False) -> Simulation:
    return Simulation(seed, trace).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--verbose", action="store_true", help="print the schedule's trace")
    args = parser.parse_args(argv)
    sim = Simulation(args.seed, trace=args.verbose)
    try:
        sim.run()
    except Violation as exc:
        if sim.trace is not None:
            print("\n".join(sim.trace))
        print(exc)
        return 1
    if sim.trace is not None:
        print("\n".join(sim.trace))
    print(f"seed {args.seed}: ok ({sim.steps} steps, {len(sim.committed)} committed, {sim.now} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
