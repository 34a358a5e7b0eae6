"""A model check of KIP-250's quorum acks: one partition's replicas, their logs, a leader
appending, followers fetching at their own pace, the ISR, crashes, restarts and elections,
with the decisions taken by ``brook.metadata.quorum_acks`` (the high watermark, and the
most-complete-log election) or, for comparison, by Kafka's rule (the first live in-sync
replica in assignment order).

A *history* is a list of events, blind to the state (``Append``, ``Fetch``, ``Tick``,
``Crash``, ``Restart``, ``Elect``); one that does not apply (a crashed replica fetching, an
election while there is a leader) does nothing. So the same history can be replayed under
either election rule, and only the elections differ. ``random_history`` draws one from a
seed: the shape when not given, each follower's speed and fetch size, the lag allowed before
the ISR drops a follower, how often replicas crash and restart, which replicas answer the
controller. After the history, every replica restarts, a leader is elected, every follower
catches up and one more record must be acknowledged (the partition resumes).

What is modelled, and why each rule is the product's:

* A log is a list of entries (epoch, record): the offset is the position; record -1 is the
  marker a new leader writes at the start of its epoch (a LEADER_CHANGE control batch), so
  its high watermark can pass the records it inherited without waiting for a produce.
* A follower fetches from the offset where its log ends. If its log is not a prefix of the
  leader's, it truncates to the common prefix first and the fetch carries nothing
  (DivergingEpoch); otherwise the leader takes the fetch offset as the follower's log end
  (what this fetch copies counts from the follower's next fetch, as in Kafka) and the fetch
  copies up to ``max_entries`` entries.
* The leader's HW is ``quorum_acks.high_watermark`` over the ISR's log ends (the leader's
  own, and each follower's as last learned in this epoch; unknown as -1) with the leader's
  epoch start offset; it never moves back. Every record below the HW is acknowledged, and
  remembered for good. (Without the epoch start, counting replicas alone, the most-complete
  rule loses records too: Raft's figure 8, a test of its own.)
* The ISR always holds the leader. A follower is added once it has fetched from at or past
  the HW and the epoch start; one not caught up to the leader's log end for more than
  ``lag_ticks`` ticks is dropped (down to the leader alone, as Kafka allows: the HW then
  stands still, there being fewer than Q in sync). A crashed replica leaves the ISR unless
  it is the last member (the controller fences it); the ISR changes at once (no AlterPartition
  in flight).
* Logs are durable: a crash keeps the log, a restarted replica is a follower.
* When the leader has crashed, an ``Elect`` event is the controller's attempt: a new epoch
  (larger than any before) and a leader chosen by the rule, with the live in-sync replicas
  kept in the ISR; or nobody, and the partition waits for a later attempt. The most-complete
  rule asks the replicas the event names (the controller goes ahead with whoever answered;
  crashed ones do not answer) for their (last epoch, log end) and calls
  ``quorum_acks.most_complete``; Kafka's rule takes the first live ISR member in assignment
  order.

Checked after every event:

* every acknowledged record is in the current leader's log at its offset (so it survives:
  everyone else truncates to the leader's log) -- a ``Loss``;
* at least Q replicas hold every acknowledged record;
* the leader is in the ISR, its HW never moves back and never passes its log end;
* the most-complete rule elects nobody with fewer than RF - Q + 1 answers (and somebody with
  enough);

and at the end: logs that share an entry share everything before it, every replica is the
leader's log once caught up, and the new record is acknowledged.

Replay one seed with its trace::

    python tests/sim/quorum_acks_model.py --seed 7 --rule kafka --verbose
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from brook.metadata import quorum_acks
from brook.metadata.quorum_acks import LogEnd

MARKER = -1  # the record of a leader's epoch-start marker
KAFKA = "kafka"
MOST_COMPLETE = "most-complete"
RULES = (KAFKA, MOST_COMPLETE)
# (replication factor, quorum.required.acks) drawn when a seed is not given one
SHAPES = ((3, 2), (4, 2), (4, 3), (5, 2), (5, 3), (5, 4))

Entry = tuple[int, int]  # (epoch, record)


# ---------------------------------------------------------------------------- events
@dataclass(frozen=True, slots=True)
class Append:
    """The leader appends ``count`` records (a produce with acks=all)."""

    count: int


@dataclass(frozen=True, slots=True)
class Fetch:
    """``replica`` fetches from the leader, taking at most ``max_entries`` entries."""

    replica: int
    max_entries: int


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passes: the leader drops followers that have lagged too long."""


@dataclass(frozen=True, slots=True)
class Crash:
    """``replica`` crashes (None: whichever replica leads now)."""

    replica: int | None


@dataclass(frozen=True, slots=True)
class Restart:
    replica: int


@dataclass(frozen=True, slots=True)
class Elect:
    """The controller tries to elect a leader; ``answers``: the replicas it hears from."""

    answers: tuple[int, ...]


Event = Append | Fetch | Tick | Crash | Restart | Elect


@dataclass(frozen=True)
class History:
    rf: int
    q: int
    lag_ticks: int
    events: tuple[Event, ...]

    @property
    def replicas(self) -> tuple[int, ...]:
        """The assignment, in order: brokers 1..RF (replica 1 leads first)."""
        return tuple(range(1, self.rf + 1))


def random_history(seed: int, rf: int | None = None, q: int | None = None) -> History:
    """The history one seed draws (the shape too, unless given)."""
    rng = random.Random(seed)
    if rf is None or q is None:
        rf, q = rng.choice(SHAPES)
    replicas = range(1, rf + 1)
    speed = {r: rng.choice((1, 1, 2, 4, 8, 16)) for r in replicas}
    size = {r: rng.choice((1, 1, 2, 3, 50)) for r in replicas}
    weights = {
        "append": rng.choice((4, 8, 16)),
        "fetch": sum(speed.values()),
        "tick": rng.choice((1, 4, 8)),
        "crash": rng.choice((1, 2, 4)),
        "restart": rng.choice((1, 3, 6)),
        "elect": rng.choice((2, 6, 12)),
    }
    kinds = list(weights)
    kind_weights = [weights[k] for k in kinds]
    events: list[Event] = []
    for _ in range(rng.randint(40, 250)):
        kind = rng.choices(kinds, kind_weights)[0]
        if kind == "append":
            events.append(Append(rng.randint(1, 3)))
        elif kind == "fetch":
            r = rng.choices(list(replicas), [speed[r] for r in replicas])[0]
            events.append(Fetch(r, rng.randint(0, size[r])))
        elif kind == "tick":
            events.append(Tick())
        elif kind == "crash":
            events.append(Crash(None if rng.random() < 0.5 else rng.randint(1, rf)))
        elif kind == "restart":
            events.append(Restart(rng.randint(1, rf)))
        else:
            order = list(replicas)
            rng.shuffle(order)
            events.append(Elect(tuple(order[: rng.randint(1, rf)])))
    return History(rf, q, rng.choice((1, 3, 10, 1000)), tuple(events))


# ---------------------------------------------------------------------------- the model
class Violation(AssertionError):
    """An invariant failed; the message says which, at which event."""


class Loss(Violation):
    """An acknowledged record is not in the leader's log: it is gone."""


@dataclass(eq=False)
class Replica:
    id: int
    log: list[Entry] = field(default_factory=list)
    up: bool = True
    hw: int = 0  # the HW this replica last learned (as a follower) or set (as the leader)

    def report(self) -> LogEnd:
        """What it answers the controller: (last epoch, log end)."""
        return LogEnd(self.log[-1][0] if self.log else -1, len(self.log))


@dataclass(frozen=True, slots=True)
class ElectionAttempt:
    step: int
    live_answers: tuple[int, ...]
    chosen: int | None


Rule = Callable[["Model", Elect], int | None]


def kafka_rule(model: Model, event: Elect) -> int | None:
    """Kafka's election: the first live in-sync replica in assignment order."""
    for r in model.replicas:
        if r in model.isr and model.nodes[r].up:
            return r
    return None


def most_complete_rule(model: Model, event: Elect) -> int | None:
    """KIP-250's: the most complete log among the live replicas that answered."""
    reports = {r: model.nodes[r].report() for r in event.answers if model.nodes[r].up}
    return quorum_acks.most_complete(model.replicas, reports, model.q)


RULE_FUNCTIONS: dict[str, Rule] = {KAFKA: kafka_rule, MOST_COMPLETE: most_complete_rule}


class Model:
    def __init__(
        self, rf: int, q: int, rule: str, lag_ticks: int = 10, trace: bool = False
    ) -> None:
        if quorum_acks.config_error(q, rf) is not None:
            raise ValueError(quorum_acks.config_error(q, rf))
        self.rf = rf
        self.q = q
        self.rule = rule
        self.elect_fn = RULE_FUNCTIONS[rule]
        self.lag_ticks = lag_ticks
        self.replicas = tuple(range(1, rf + 1))
        self.nodes = {r: Replica(r) for r in self.replicas}
        self.trace: list[str] | None = [] if trace else None
        self.step = 0
        self.now = 0
        self.next_record = 0
        self.max_epoch = 0
        self.acked: list[Entry] = []  # acknowledged entries by offset (always a prefix)
        self.seen_hw = (0, 0)  # (epoch, HW) at the last check
        self.elections: list[ElectionAttempt] = []
        # the leader's view
        self.leader: int | None = None
        self.epoch = 0
        self.epoch_start = 0
        self.isr: list[int] = list(self.replicas)
        self.known_end: dict[int, int] = {}
        self.last_caught_up: dict[int, int] = {}
        self.last_fetch_at: dict[int, int] = {}
        self.last_fetch_leader_end: dict[int, int] = {}
        self._become_leader(self.replicas[0])
        if self.trace is not None:
            self._log(f"start: RF {rf}, Q {q}, rule {rule}, lag {lag_ticks} ticks")
            self.trace.append(f"     {self.describe()}")

    # ------------------------------------------------------------------ helpers
    def _log(self, text: str) -> None:
        if self.trace is not None:
            self.trace.append(f"{self.step:>4} {text}")

    def describe(self) -> str:
        leader = "none" if self.leader is None else f"{self.leader} (epoch {self.epoch})"
        nodes = []
        for r, node in self.nodes.items():
            entries = " ".join(f"{e}*" if rec == MARKER else f"{e}.{rec}" for e, rec in node.log)
            nodes.append(f"{r}{'' if node.up else '(down)'}=[{entries}]")
        hw = self.nodes[self.leader].hw if self.leader is not None else "-"
        return (
            f"leader {leader} hw {hw} isr {sorted(self.isr)} acked {len(self.acked)} | "
            + " ".join(nodes)
        )

    def fail(self, text: str, kind: type[Violation] = Violation) -> None:
        raise kind(f"event {self.step} ({self.rule}): {text}\n  state: {self.describe()}")

    @property
    def live(self) -> list[int]:
        return [r for r in self.replicas if self.nodes[r].up]

    # ------------------------------------------------------------------ events
    def apply(self, event: Event) -> None:
        self.step += 1
        lines = len(self.trace) if self.trace is not None else 0
        if isinstance(event, Append):
            self._append(event)
        elif isinstance(event, Fetch):
            self._fetch(event)
        elif isinstance(event, Tick):
            self._tick()
        elif isinstance(event, Crash):
            self._crash(event)
        elif isinstance(event, Restart):
            self._restart(event)
        else:
            self._elect(event)
        if self.trace is not None and len(self.trace) > lines:  # the state after a change
            self.trace.append(f"     {self.describe()}")
        self.check()

    def _append(self, event: Append) -> None:
        if self.leader is None:
            return
        log = self.nodes[self.leader].log
        for _ in range(event.count):
            log.append((self.epoch, self.next_record))
            self.next_record += 1
        self._log(f"leader {self.leader} appends {event.count}")
        self._update_hw()

    def _fetch(self, event: Fetch) -> None:
        follower = self.nodes[event.replica]
        if self.leader is None or event.replica == self.leader or not follower.up:
            return
        leader = self.nodes[self.leader]
        common = _common_prefix(follower.log, leader.log)
        if common < len(follower.log):
            del follower.log[common:]
            follower.hw = min(follower.hw, common)
            self._log(f"{event.replica} diverges from the leader: truncated to {common}")
            return
        offset = len(follower.log)
        leader_end = len(leader.log)
        r = event.replica
        if offset >= leader_end:
            self.last_caught_up[r] = max(self.last_caught_up[r], self.now)
        elif offset >= self.last_fetch_leader_end[r]:
            self.last_caught_up[r] = max(self.last_caught_up[r], self.last_fetch_at[r])
        self.last_fetch_at[r] = self.now
        self.last_fetch_leader_end[r] = leader_end
        self.known_end[r] = offset
        copied = leader.log[offset : offset + event.max_entries]
        follower.log.extend(copied)
        follower.hw = min(leader.hw, len(follower.log))
        self._log(f"{r} fetches from {offset}, copies {len(copied)}")
        if r not in self.isr and offset >= leader.hw and offset >= self.epoch_start:
            self.isr.append(r)
            self._log(f"{r} rejoins the ISR")
        self._update_hw()

    def _tick(self) -> None:
        self.now += 1
        if self.leader is None:
            return
        end = len(self.nodes[self.leader].log)
        lagging = [
            r
            for r in self.isr
            if r != self.leader
            and self.known_end.get(r, -1) < end
            and self.now - self.last_caught_up[r] > self.lag_ticks
        ]
        if lagging:
            self.isr = [r for r in self.isr if r not in lagging]
            self._log(f"the ISR drops {lagging}")

    def _crash(self, event: Crash) -> None:
        r = self.leader if event.replica is None else event.replica
        if r is None or not self.nodes[r].up:
            return
        self.nodes[r].up = False
        if r == self.leader:
            self.leader = None
        if r in self.isr and len(self.isr) > 1:
            self.isr.remove(r)
        self._log(f"{r} crashes")

    def _restart(self, event: Restart) -> None:
        node = self.nodes[event.replica]
        if node.up:
            return
        node.up = True
        self._log(f"{event.replica} restarts as a follower")

    def _elect(self, event: Elect) -> None:
        if self.leader is not None:
            return
        live_answers = tuple(r for r in event.answers if self.nodes[r].up)
        if self.rule == MOST_COMPLETE:
            heard = f"answers { ({r: self.nodes[r].report().key() for r in live_answers}) }"
        else:
            heard = f"live ISR {[r for r in self.isr if self.nodes[r].up]}"
        chosen = self.elect_fn(self, event)
        self.elections.append(ElectionAttempt(self.step, live_answers, chosen))
        if self.rule == MOST_COMPLETE:
            enough = len(live_answers) >= quorum_acks.reports_needed(self.rf, self.q)
            if chosen is not None and not enough:
                self.fail(f"elected {chosen} on {len(live_answers)} answers {live_answers}")
            if chosen is None and enough:
                self.fail(f"elected nobody on {len(live_answers)} answers {live_answers}")
        if chosen is None:
            self._log(f"no leader elected ({heard})")
            return
        self.isr = [chosen] + [r for r in self.isr if r != chosen and self.nodes[r].up]
        self._become_leader(chosen)
        self._log(f"{chosen} elected, epoch {self.epoch} ({heard})")

    def _become_leader(self, r: int) -> None:
        self.max_epoch += 1
        self.epoch = self.max_epoch
        self.leader = r
        log = self.nodes[r].log
        self.epoch_start = len(log)
        log.append((self.epoch, MARKER))
        for f in self.replicas:
            self.known_end[f] = -1
            self.last_caught_up[f] = self.now
            self.last_fetch_at[f] = self.now
            self.last_fetch_leader_end[f] = 0
        self._update_hw()

    def _update_hw(self) -> None:
        assert self.leader is not None
        leader = self.nodes[self.leader]
        ends = [len(leader.log) if r == self.leader else self.known_end[r] for r in self.isr]
        candidate = quorum_acks.high_watermark(ends, self.q, self.epoch_start)
        if candidate is None or candidate <= leader.hw:
            return
        leader.hw = candidate
        for offset in range(len(self.acked), candidate):
            self.acked.append(leader.log[offset])
        self._log(f"HW {candidate}")

    # ------------------------------------------------------------------ invariants
    def check(self) -> None:
        acked = self.acked
        n = len(acked)
        if self.leader is not None:
            leader = self.nodes[self.leader]
            if leader.log[:n] != acked:
                lost = [
                    (offset, entry)
                    for offset, entry in enumerate(acked)
                    if offset >= len(leader.log) or leader.log[offset] != entry
                ]
                self.fail(
                    f"leader {self.leader} lacks acknowledged (offset, (epoch, record)) {lost}",
                    Loss,
                )
            if self.leader not in self.isr:
                self.fail(f"leader {self.leader} is not in the ISR {self.isr}")
            if leader.hw > len(leader.log):
                self.fail(f"HW {leader.hw} past the leader's log end {len(leader.log)}")
            if self.seen_hw[0] == self.epoch and leader.hw < self.seen_hw[1]:
                self.fail(f"the HW moved back from {self.seen_hw[1]} to {leader.hw}")
            self.seen_hw = (self.epoch, leader.hw)
        if n:
            holders = [r for r, node in self.nodes.items() if node.log[:n] == acked]
            if len(holders) < self.q:
                self.fail(f"only {holders} hold every acknowledged record (Q = {self.q})")

    def check_logs_match(self) -> None:
        """Two logs with the same entry at an offset are the same up to it (one leader per
        epoch appends each offset once)."""
        logs = [node.log for node in self.nodes.values()]
        for i, a in enumerate(logs):
            for b in logs[i + 1 :]:
                last = max((o for o in range(min(len(a), len(b))) if a[o] == b[o]), default=-1)
                if a[: last + 1] != b[: last + 1]:
                    self.fail(f"logs share entry {a[last]} at {last} but differ before it")

    # ------------------------------------------------------------------ the end
    def settle(self) -> None:
        """Everyone restarts; a leader is elected from all of them; the followers catch up;
        one more record is acknowledged; all logs are the leader's."""
        for r in self.replicas:
            self.apply(Restart(r))
        self.apply(Elect(self.replicas))
        if self.leader is None:
            self.fail("no leader elected with every replica live")
        self.apply(Append(1))
        target = len(self.nodes[self.leader].log)
        for _ in range(4):  # truncate, copy, report, and learn the HW
            for r in self.replicas:
                self.apply(Fetch(r, 1 << 30))
        leader = self.nodes[self.leader]
        if leader.hw < target:
            self.fail(f"the new record (HW {leader.hw} < {target}) was never acknowledged")
        for r, node in self.nodes.items():
            if node.log != leader.log:
                self.fail(f"replica {r} never caught up with the leader's log")
        self.check_logs_match()


def _common_prefix(a: Sequence[Entry], b: Sequence[Entry]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    i = 0
    while a[i] == b[i]:
        i += 1
    return i


def run(history: History, rule: str, trace: bool = False, settle: bool = True) -> Model:
    """Play ``history`` under ``rule``; a ``Violation`` (``Loss``) if an invariant fails."""
    model = Model(history.rf, history.q, rule, history.lag_ticks, trace)
    for event in history.events:
        model.apply(event)
    if settle:
        model.settle()
    return model


def loses(history: History, rule: str) -> bool:
    """Whether ``history`` loses an acknowledged record under ``rule``."""
    try:
        run(history, rule)
    except Loss:
        return True
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--rule", choices=RULES, default=MOST_COMPLETE)
    parser.add_argument("--rf", type=int, help="replication factor (with --q; else the seed's)")
    parser.add_argument("--q", type=int, help="quorum.required.acks (with --rf)")
    parser.add_argument("--verbose", action="store_true", help="print the trace")
    args = parser.parse_args(argv)
    history = random_history(args.seed, args.rf, args.q)
    model = Model(history.rf, history.q, args.rule, history.lag_ticks, trace=args.verbose)
    try:
        for event in history.events:
            model.apply(event)
        model.settle()
    except Violation as exc:
        if model.trace is not None:
            print("\n".join(model.trace))
        print(f"seed {args.seed}: {type(exc).__name__}: {exc}")
        return 1
    if model.trace is not None:
        print("\n".join(model.trace))
    print(
        f"seed {args.seed} ({args.rule}, RF {history.rf}, Q {history.q}): ok, "
        f"{len(history.events)} events, {len(model.acked)} acknowledged, "
        f"{len(model.elections)} election attempts"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
