"""The controller shell (Kafka's QuorumController): one operation at a time decides on the
controller's own image, appends its records to the metadata quorum, and answers once they
are committed.

The controller keeps its own state. Standing by, it holds none; when its node becomes the
quorum leader (and the quorum has given the node's loader everything before the new epoch),
it copies the node's committed image and serves. Each operation's records are applied to that
copy as they are appended, before they commit, so the next operation decides on them
(operations are decided in order and their commits overlap). If it loses the leadership or
the quorum refuses an append, the copy is dropped and every waiting operation fails with
NOT_CONTROLLER; the next activation starts again from what was committed.

Broker sessions (registration, heartbeats, fencing of silent brokers, controlled shutdown)
are kept here as well, with the pure rules of ``broker_heartbeat.py`` and
``cluster_control.py``. Time comes from the ``clock`` passed in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from brook.protocol.errors import Errors, KafkaError
from brook.security.acl import AclBinding, AclBindingFilter

from . import acl_control, quorum_acks
from .broker_heartbeat import BrokerHeartbeatManager, BrokerState
from .cluster_control import ClusterControl
from .controller import PRODUCER_ID_BLOCK, ConfigOp, Controller, CreatedTopic, CreateTopicSpec
from .controller_api import (
    BrokerHeartbeat,
    BrokerRegistration,
    Committed,
    ControllerError,
    HeartbeatReply,
    IsrChange,
    IsrChangeResult,
    Outcome,
    PartitionResult,
    ProducerIdBlock,
    Reassignment,
    TopicResult,
)
from .image import MetadataImage
from .leader_balance import LeaderBalancer, imbalanced
from .loader import MetadataLoader
from .partition_change import alter_isr, applied
from .quorum import CommittedBatch, LeaderAndEpoch, MetadataQuorum, NotLeaderError, StorageError
from .records import MetadataRecord, encode
from .replica_logs import ReplicaLogs
from .scram_control import (
    ScramDeletion,
    ScramUpsertion,
    UserResult,
    alter_user_scram_credentials,
)

log = logging.getLogger(__name__)

# How often the active controller looks for fenced quorum-acks partitions to elect leaders for.
QUORUM_ELECTION_POLL_S = 0.05
T = TypeVar("T")
Decide = Callable[[Controller, ClusterControl], tuple[Sequence[MetadataRecord], T]]
# Creates what records need on this node before they are appended; returns the undo.
Preparer = Callable[[Sequence[MetadataRecord]], Callable[[], None]]


class _Active:
    """What an active controller holds for one epoch."""

    def __init__(
        self, epoch: int, image: MetadataImage, config: Mapping[str, Any], rng: random.Random
    ) -> None:
        self.epoch = epoch
        self.image = image
        self.decisions = Controller(image, config, rng)
        self.cluster = ClusterControl(image, config)


class QuorumController:
    def __init__(
        self,
        node_id: int,
        cluster_id: str,
        quorum: MetadataQuorum,
        loader: MetadataLoader,
        server_config: Mapping[str, Any],
        clock: Callable[[], int],
        rng: random.Random | None = None,
        bootstrap: Sequence[MetadataRecord] = (),
    ) -> None:
        self.node_id = node_id
        # Records a new cluster starts with (brook storage format --add-scram), appended by
        # the first active controller of a metadata log that holds nothing yet.
        self.bootstrap = list(bootstrap)
        self.cluster_id = cluster_id
        self.quorum = quorum
        self.loader = loader
        self.server_config = server_config
        self.clock = clock
        self.rng = rng or random.Random()
        self.heartbeats = BrokerHeartbeatManager(int(server_config["broker.session.timeout.ms"]))
        self._active: _Active | None = None
        self._lock = asyncio.Lock()
        self._committed = -1
        self._waiting: list[tuple[int, asyncio.Future[None]]] = []
        self._fencer: asyncio.Task[None] | None = None
        self.balancer = LeaderBalancer(_imbalance_interval_ms(server_config))
        self._balancing: asyncio.Task[None] | None = None
        self._electing: asyncio.Task[None] | None = None
        self._preparer: Preparer | None = None
        self._activated_before = False
        self._bootstrapping: asyncio.Task[None] | None = None
        # TLS / SASL of the inter-broker listener, for asking replicas about their logs
        self.replica_security: Any = None
        quorum.register_listener(self)

    @property
    def active(self) -> bool:
        return self._active is not None

    # ------------------------------------------------------------------ QuorumListener
    def handle_commit(self, batch: CommittedBatch) -> None:
        self._committed = max(self._committed, batch.last_offset)
        if self._waiting:
            still = []
            for offset, future in self._waiting:
                if offset <= self._committed:
                    if not future.done():
                        future.set_result(None)
                else:
                    still.append((offset, future))
            self._waiting = still

    def handle_load_snapshot(self, end_offset: int, records: Sequence[bytes]) -> None:
        self._committed = max(self._committed, end_offset - 1)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        if leader.is_leader(self.node_id):
            if self._active is None or self._active.epoch != leader.epoch:
                self._activate(leader.epoch)
        elif self._active is not None:
            self._deactivate(f"the quorum is now led by {leader.leader_id} in epoch {leader.epoch}")

    def _activate(self, epoch: int) -> None:
        self._deactivate(None)
        image = self.loader.image.copy()
        self._active = _Active(epoch, image, self.server_config, self.rng)
        now = self.clock()
        sessions = {
            b.broker_id: (b.fenced, b.in_controlled_shutdown) for b in image.brokers.values()
        }
        if not self._activated_before:
            # This process just started: the broker of this very node (a combined node) is
            # not running its old incarnation any more, so its registration is not kept
            # alive for a session timeout; every other broker's is (a failover fences no one).
            sessions.pop(self.node_id, None)
            self._activated_before = True
        self.heartbeats.reset(sessions, now)
        self.balancer.reset()
        with contextlib.suppress(RuntimeError):  # no loop: a test driving the shell by hand
            loop = asyncio.get_running_loop()
            self._fencer = loop.create_task(self._fence_stale_brokers())
            if self.balancer.interval_ms is not None:
                self._balancing = loop.create_task(self._balance_leaders())
            self._electing = loop.create_task(self._elect_most_complete())
            if self.bootstrap and image.offset == -1 and self.quorum.next_offset <= 1:
                # an empty log (at most this leader's own LeaderChange): a new cluster
                self._bootstrapping = loop.create_task(self._append_bootstrap())
        log.info("node %d is the active controller in epoch %d", self.node_id, epoch)

    async def _append_bootstrap(self) -> None:
        records = list(self.bootstrap)
        try:
            await self._run(lambda c, _: (records, None))
        except Exception as exc:  # not the leader any more: the next one appends them
            log.warning("the bootstrap records were not appended: %s", exc)
            return
        log.info("appended %d bootstrap record(s) to the new metadata log", len(records))

    def _deactivate(self, reason: str | None) -> None:
        if self._active is not None and reason:
            log.info("node %d stops being the active controller: %s", self.node_id, reason)
        self._active = None
        if self._fencer is not None:
            self._fencer.cancel()
            self._fencer = None
        if self._balancing is not None:
            self._balancing.cancel()
            self._balancing = None
        if self._electing is not None:
            self._electing.cancel()
            self._electing = None
        code = Errors.KAFKA_STORAGE_ERROR if self._storage_failed() else Errors.NOT_CONTROLLER
        waiting, self._waiting = self._waiting, []
        for _, future in waiting:
            if not future.done():
                future.set_exception(ControllerError(code, reason))

    def _storage_failed(self) -> bool:
        return getattr(self.quorum, "failure", None) is not None

    def set_preparer(self, preparer: Preparer) -> None:
        """On a combined node: create what an operation's records need on this node (the
        logs of new partitions) before they are appended, so that an operation this node's
        storage cannot carry out is refused (KAFKA_STORAGE_ERROR) instead of committed."""
        self._preparer = preparer

    # ------------------------------------------------------------------ running operations
    async def _run(
        self, decide: Decide[T], *, write: bool = True, elects: bool = False
    ) -> Committed[T]:
        """Decide on the active controller's image and append the records. A leader change
        of a quorum-acks topic is turned into a fence (``quorum_acks.fence_leader_changes``)
        unless ``elects``: the most-complete-log election's own records."""
        undo: Callable[[], None] | None = None
        async with self._lock:
            active = self._require_active()
            records, value = decide(active.decisions, active.cluster)
            if not elects:
                records = quorum_acks.fence_leader_changes(active.image, records)
            if not records or not write:
                return Committed(value)
            if self._preparer is not None:
                try:
                    undo = self._preparer(records)
                except KafkaError as exc:
                    raise ControllerError(exc.code, exc.message) from exc
            try:
                last = self._append(active, records)
            except ControllerError:
                if undo is not None:
                    undo()
                raise
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            if last <= self._committed:
                future.set_result(None)
            else:
                self._waiting.append((last, future))
        try:
            await future
        except ControllerError as exc:
            if undo is not None and exc.error_code == Errors.KAFKA_STORAGE_ERROR:
                undo()  # never committed: the metadata log failed before it was flushed
            raise
        return Committed(value, last)

    def _append(self, active: _Active, records: Sequence[MetadataRecord]) -> int:
        try:
            last = self.quorum.append(active.epoch, [encode(r) for r in records])
        except StorageError as exc:
            self._deactivate(str(exc))
            raise ControllerError(Errors.KAFKA_STORAGE_ERROR, str(exc)) from exc
        except NotLeaderError as exc:
            self._deactivate(str(exc))
            raise ControllerError(Errors.NOT_CONTROLLER, str(exc)) from exc
        first = last - len(records) + 1
        active.image.apply_all(zip(range(first, last + 1), records, strict=True))
        return last

    def _next_offset(self) -> int:
        return self.quorum.next_offset

    # ------------------------------------------------------------------ topics and configs
    async def create_topics(
        self, specs: Sequence[CreateTopicSpec], validate_only: bool
    ) -> Committed[list[CreatedTopic]]:
        return await self._run(_decision(lambda c: c.create_topics(specs, validate_only)))

    async def delete_topics(
        self, names: Sequence[str | None], ids: Sequence[uuid.UUID | None]
    ) -> Committed[list[TopicResult]]:
        return await self._run(_decision(lambda c: c.delete_topics(names, ids)))

    async def create_partitions(
        self,
        requests: Sequence[tuple[str, int, list[list[int]] | None]],
        validate_only: bool,
    ) -> Committed[list[Outcome]]:
        return await self._run(_decision(lambda c: c.create_partitions(requests, validate_only)))

    async def alter_user_scram_credentials(
        self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
    ) -> Committed[list[UserResult]]:
        return await self._run(
            lambda c, _: alter_user_scram_credentials(c.image, deletions, upsertions)
        )

    async def alter_configs(
        self,
        resources: Sequence[tuple[int, str, Sequence[ConfigOp]]],
        incremental: bool,
        validate_only: bool,
    ) -> Committed[list[Outcome]]:
        return await self._run(
            _decision(lambda c: c.alter_configs(resources, incremental, validate_only))
        )

    async def elect_leaders(
        self, election_type: int, partitions: Sequence[tuple[str, int]] | None
    ) -> Committed[list[PartitionResult]]:
        return await self._run(_decision(lambda c: c.elect_leaders(election_type, partitions)))

    async def alter_partition_reassignments(
        self, targets: Sequence[tuple[str, int, list[int] | None]]
    ) -> Committed[list[PartitionResult]]:
        return await self._run(_decision(lambda c: c.alter_partition_reassignments(targets)))

    async def list_partition_reassignments(
        self, partitions: Sequence[tuple[str, int]] | None
    ) -> list[Reassignment]:
        def decide(c: Controller, _: ClusterControl) -> tuple[list[MetadataRecord], Any]:
            return [], [
                Reassignment(t, p, r, a, d)
                for t, p, r, a, d in c.list_partition_reassignments(partitions)
            ]

        return (await self._run(decide, write=False)).value

    # ------------------------------------------------------------------ ACLs
    async def create_acls(
        self, bindings: Sequence[AclBinding]
    ) -> Committed[list[acl_control.AclOutcome]]:
        def decide(c: Controller, _: ClusterControl) -> tuple[Any, Any]:
            return acl_control.create_acls(c.image, bindings)

        return await self._run(decide)

    async def delete_acls(
        self, filters: Sequence[AclBindingFilter]
    ) -> Committed[list[acl_control.AclDeletion]]:
        def decide(c: Controller, _: ClusterControl) -> tuple[Any, Any]:
            return acl_control.delete_acls(c.image, filters)

        return await self._run(decide)

    async def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int
    ) -> Committed[ProducerIdBlock]:
        def decide(c: Controller, _: ClusterControl) -> tuple[Any, ProducerIdBlock]:
            self._check_broker_epoch(broker_id, broker_epoch)
            decision, start = c.allocate_producer_ids(broker_id, broker_epoch)
            return decision.records, ProducerIdBlock(broker_id, start, PRODUCER_ID_BLOCK)

        return await self._run(decide)

    # ------------------------------------------------------------------ broker lifecycle
    async def register_broker(self, registration: BrokerRegistration) -> Committed[int]:
        def decide(_: Controller, cluster: ClusterControl) -> tuple[Any, int]:
            session = self.heartbeats.sessions.get(registration.broker_id)
            live = session is not None and (
                self.clock() - session.last_contact_ms <= self.heartbeats.session_timeout_ms
            )
            records, epoch = cluster.register(
                registration, self._next_offset(), self.cluster_id, live
            )
            return records, epoch

        result = await self._run(decide)
        broker = self._require_active().image.brokers[registration.broker_id]
        self.heartbeats.touch(broker.broker_id, self.clock(), broker.fenced, -1)
        return result

    async def broker_heartbeat(self, heartbeat: BrokerHeartbeat) -> HeartbeatReply:
        def decide(_: Controller, cluster: ClusterControl) -> tuple[Any, HeartbeatReply]:
            broker = self._check_broker_epoch(heartbeat.broker_id, heartbeat.broker_epoch)
            registration_offset = broker.broker_epoch
            current, nxt = self.heartbeats.next_state(
                heartbeat, registration_offset, cluster.leads_partitions(broker.broker_id)
            )
            records: list[MetadataRecord] = []
            if current is not nxt:
                if nxt in (BrokerState.FENCED, BrokerState.SHUTDOWN_NOW):
                    if not broker.fenced:
                        records = cluster.fence(broker)
                elif nxt is BrokerState.UNFENCED:
                    records = cluster.unfence(broker)
                elif nxt is BrokerState.CONTROLLED_SHUTDOWN:
                    records = cluster.controlled_shutdown(broker)
                    self.heartbeats.start_controlled_shutdown(
                        broker.broker_id, self._next_offset() + len(records) - 1
                    )
            self.heartbeats.touch(
                broker.broker_id, self.clock(), nxt.fenced, heartbeat.current_metadata_offset
            )
            reply = HeartbeatReply(
                is_caught_up=heartbeat.current_metadata_offset >= registration_offset,
                is_fenced=nxt.fenced,
                should_shutdown=nxt is BrokerState.SHUTDOWN_NOW,
            )
            return records, reply

        return (await self._run(decide)).value

    async def alter_partition(
        self, broker_id: int, broker_epoch: int, changes: Sequence[IsrChange]
    ) -> Committed[list[IsrChangeResult]]:
        def decide(_: Controller, cluster: ClusterControl) -> tuple[Any, list[IsrChangeResult]]:
            self._check_broker_epoch(broker_id, broker_epoch)
            image = cluster.image
            records: list[MetadataRecord] = []
            results: list[IsrChangeResult] = []
            for change in changes:
                topic = image.topics_by_id.get(change.topic_id)
                if topic is None:
                    results.append(
                        IsrChangeResult(change.topic_id, change.partition, Errors.UNKNOWN_TOPIC_ID)
                    )
                    continue
                info = topic.partitions.get(change.partition)
                if info is None:
                    results.append(
                        IsrChangeResult(
                            change.topic_id, change.partition, Errors.UNKNOWN_TOPIC_OR_PARTITION
                        )
                    )
                    continue
                error, record = alter_isr(
                    info,
                    broker_id,
                    change.leader_epoch,
                    change.partition_epoch,
                    change.new_isr,
                    change.leader_recovery_state,
                    image.brokers,
                )
                if record is not None:
                    records.append(record)
                if error != Errors.NONE:
                    results.append(IsrChangeResult(change.topic_id, change.partition, error))
                    continue
                new = applied(info, record)
                results.append(
                    IsrChangeResult(
                        change.topic_id,
                        change.partition,
                        Errors.NONE,
                        new.leader,
                        new.leader_epoch,
                        new.isr,
                        new.partition_epoch,
                        new.leader_recovery_state,
                    )
                )
            return records, results

        return await self._run(decide)

    def _check_broker_epoch(self, broker_id: int, broker_epoch: int) -> Any:
        broker = self._require_active().image.brokers.get(broker_id)
        if broker is None or broker.broker_epoch != broker_epoch:
            raise ControllerError(
                Errors.STALE_BROKER_EPOCH,
                f"Broker {broker_id} epoch {broker_epoch} is not the registered one",
            )
        return broker

    def _require_active(self) -> _Active:
        if self._storage_failed():
            raise ControllerError(
                Errors.KAFKA_STORAGE_ERROR,
                f"the metadata log of node {self.node_id} failed: {self.quorum.failure}",  # type: ignore[attr-defined]
            )
        if self._active is None:
            raise ControllerError(
                Errors.NOT_CONTROLLER, f"node {self.node_id} is not the active controller"
            )
        return self._active

    async def _fence_stale_brokers(self) -> None:
        """Fence one silent broker at a time, as soon as its session expires."""
        while self._active is not None:
            expiry = self.heartbeats.next_expiry_ms()
            now = self.clock()
            delay = 1.0 if expiry is None else max(0.0, (expiry - now) / 1000)
            await asyncio.sleep(min(delay, 1.0))
            stale = self.heartbeats.stale_broker(self.clock())
            if stale is None:
                continue

            def decide(_: Controller, cluster: ClusterControl, stale: int = stale) -> Any:
                broker = cluster.image.brokers.get(stale)
                self.heartbeats.fence(stale)
                if broker is None or broker.fenced:
                    return [], None
                log.info("fencing broker %d: no heartbeat for its session timeout", stale)
                return cluster.fence(broker), None

            try:
                await self._run(decide)
            except ControllerError:
                return

    async def _balance_leaders(self) -> None:
        """Automatic leader balancing: a check scheduled while a partition is imbalanced,
        run when due (see ``leader_balance.py``); polled at least once a second."""
        while self._active is not None:
            due = self.balancer.maybe_schedule(
                self.clock(), next(imbalanced(self._active.image), None) is not None
            )
            delay = 1.0 if due is None else max(0.0, (due - self.clock()) / 1000)
            await asyncio.sleep(min(delay, 1.0))
            if self._active is None or not self.balancer.is_due(self.clock()):
                continue

            def decide(_: Controller, cluster: ClusterControl) -> Any:
                records = self.balancer.run(cluster.image, cluster.acceptable)
                if records:
                    log.info("electing the preferred leader of %d partition(s)", len(records))
                return records, None

            try:
                await self._run(decide)
            except ControllerError:
                return

    async def _elect_most_complete(self) -> None:
        """KIP-250: give each fenced partition of a quorum-acks topic the leader with the most
        complete log, once RF - Q + 1 of its live replicas have said what they hold (see
        ``quorum_acks`` and ``replica_logs``); with fewer live, it stays leaderless."""
        listener = self.server_config.get("inter.broker.listener.name")
        asker = ReplicaLogs(self.node_id, str(listener) if listener else None)
        asker.channels.security = self.replica_security
        scanned = -1  # the image offset last found with nothing to elect
        try:
            while self._active is not None:
                await asyncio.sleep(QUORUM_ELECTION_POLL_S)
                active = self._active
                if active is None:
                    return
                if active.image.offset == scanned:
                    continue  # nothing changed since a scan found no fenced partition
                waiting = quorum_acks.leaderless(active.image, active.cluster.acceptable)
                if not waiting:
                    scanned = active.image.offset
                    continue
                acceptable = active.cluster.acceptable
                reports = await asker.ask(
                    active.image, quorum_acks.whom_to_ask(waiting, acceptable)
                )
                elected = quorum_acks.elect(waiting, reports, acceptable)
                if not elected:
                    continue

                def decide(_: Controller, cluster: ClusterControl, elected: Any = elected) -> Any:
                    records = []
                    for election in elected:
                        now = cluster.image.partition(election.topic, election.partition.partition)
                        record = election.record(now, cluster.acceptable)
                        if record is not None:
                            log.info("%s", election)
                            records.append(record)
                    return records, None

                try:
                    await self._run(decide, elects=True)
                except ControllerError:
                    return
        finally:
            asker.close()


def _imbalance_interval_ms(config: Mapping[str, Any]) -> int | None:
    """How often leaders are balanced; None when ``auto.leader.rebalance.enable`` is off."""
    if not config.get("auto.leader.rebalance.enable", True):
        return None
    return int(config.get("leader.imbalance.check.interval.seconds", 300)) * 1000


def _decision(call: Callable[[Controller], Any]) -> Decide[Any]:
    def decide(c: Controller, _: ClusterControl) -> tuple[Sequence[MetadataRecord], Any]:
        decision = call(c)
        return decision.records, decision.results

    return decide
