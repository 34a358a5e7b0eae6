"""A Brook node: wires the log manager, the metadata quorum and image, the controller, the
replica manager, the fetch session cache and the listeners, and runs the background work
(flushing, retention, checkpoints). ``Broker`` is what request handlers see as ``ctx.broker``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import random
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from brook.config.defs import Config
from brook.config.server import (
    FOLLOWER_FETCH_DELAY_KEY,
    METRICS_LISTENER_KEY,
    PRODUCE_DELAY_KEY,
    inter_broker_listener,
    is_sole_voter,
    log_dirs,
    node_id,
    parse_listener,
    roles,
    topic_defaults,
    voters,
)
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.log.log_cleaner import CleanerConfig, LogCleaner
from brook.log.manager import LogManager
from brook.log.meta_properties import StorageCheckError, check_storage
from brook.metadata.bootstrap import read_bootstrap
from brook.metadata.controller_api import ControllerApi, ControllerError
from brook.metadata.image import Change, MetadataImage, TopicRemoved
from brook.metadata.loader import MetadataLoader
from brook.metadata.quorum import LocalQuorum
from brook.metadata.quorum_controller import QuorumController
from brook.metadata.records import METADATA_TOPIC, METADATA_TOPIC_ID, Endpoint, encode
from brook.metrics.counters import BrokerCounters
from brook.metrics.endpoint import MetricsEndpoint
from brook.metrics.snapshot import take_snapshot
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError
from brook.security.node_auth import NodeSecurity, node_security
from brook.security.scram import MECHANISMS as SCRAM_MECHANISMS
from brook.security.scram import ScramCredential, ScramServer

from . import (
    faults,
    handlers,  # noqa: F401  (registers every API handler)
)
from .authz import NodeAuthorizer, node_authorizer
from .fetch_session import FetchSessionCache
from .group.coordinator import GroupCoordinator
from .lifecycle import BrokerLifecycleManager
from .listener_principals import listener_principals
from .network import SocketServer
from .producer_ids import ProducerIdManager
from .registry import CONTROLLER
from .remote_controller import ControllerRouter, RemoteController
from .replica_fetcher.codec import FetchSettings
from .replica_fetcher.fetcher import FetcherConfig
from .replica_fetcher.manager import ReplicaFetcherManager
from .replica_manager import ReplicaManager
from .txn.coordinator import TransactionCoordinator
from .txn_verifier import TxnVerifier

log = logging.getLogger(__name__)

METADATA_LOG_CONFIG = {
    "retention.ms": -1,
    "retention.bytes": -1,
    "segment.bytes": 64 * 1024 * 1024,
    "max.message.bytes": 8 * 1024 * 1024,
}


# The GIL switch interval while the log cleaner's threads run (see _start_log_cleaner).
_CLEANER_SWITCH_INTERVAL_S = 0.001


def _now_ms() -> int:
    return int(time.time() * 1000)


class Broker:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.node_id = node_id(config)
        self.listeners = [parse_listener(text) for text in config["listeners"]]
        advertised = config["advertised.listeners"] or config["listeners"]
        self.advertised = {
            name: (host, port) for name, host, port in (parse_listener(text) for text in advertised)
        }
        self.controller_listeners = set(config["controller.listener.names"])
        max_open_files = int(config["brook.log.max.open.files"])
        self.log_manager = LogManager(
            log_dirs(config),
            topic_defaults(config),
            max_open_files=None if max_open_files == -1 else max_open_files,
            recovery_threads_per_dir=int(config["num.recovery.threads.per.data.dir"]),
        )
        self.clock: Callable[[], int] = _now_ms
        self.loader = MetadataLoader()
        # What the node counts as it works (on its loop); the endpoint serves it with the
        # rest of the node's state when metrics.prometheus.listener is set.
        self.counters = BrokerCounters()
        self.metrics: MetricsEndpoint | None = None
        if config[METRICS_LISTENER_KEY]:
            self.metrics = MetricsEndpoint(
                config[METRICS_LISTENER_KEY], lambda: take_snapshot(self), self.counters
            )
        self.socket_server = SocketServer(self)
        self.fetch_sessions = FetchSessionCache(
            int(config["max.incremental.fetch.session.cache.slots"])
        )
        # brook.fault.* delays (see faults.py): static values until the metadata is loaded
        self.fault_produce_delay_ms = int(config[PRODUCE_DELAY_KEY])
        self.fault_follower_fetch_delay_ms = int(config[FOLLOWER_FETCH_DELAY_KEY])
        # authorizer.class.name: None allows everything; else ACLs from the metadata image
        self.authorizer: NodeAuthorizer | None = node_authorizer(config, lambda: self.image)
        self.test_principals = listener_principals(config)
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()
        self.roles: frozenset[str] = frozenset()
        self.quorum: Any = None  # LocalQuorum on a lone node, else the Raft client
        self.raft: Any = None
        self.quorum_controller: QuorumController | None = None
        self.controller: ControllerApi | None = None
        self.lifecycle: BrokerLifecycleManager | None = None
        self.cluster_id = ""
        self.replica_manager: ReplicaManager | None = None  # None on a controller-only node
        self.replica_fetchers: ReplicaFetcherManager | None = None
        self.producer_ids: ProducerIdManager
        self.group_coordinator: GroupCoordinator | None = None
        self.txn_coordinator: TransactionCoordinator | None = None
        self.txn_verifier: TxnVerifier | None = None
        self.log_cleaner: LogCleaner | None = None
        # How this node connects to the other nodes' controller and inter-broker listeners
        # (TLS, SASL login); None: plain text, and always on a lone node.
        self.controller_security: NodeSecurity | None = None
        self.inter_broker_security: NodeSecurity | None = None
        if voters(config) and not is_sole_voter(config):
            names = config["controller.listener.names"]
            if names:
                self.controller_security = node_security(config, names[0], controller=True)
            inter = inter_broker_listener(config)
            if inter:
                self.inter_broker_security = node_security(config, inter, controller=False)

    @property
    def image(self) -> MetadataImage:
        """This node's view of the committed metadata."""
        return self.loader.image

    @property
    def broker_epoch(self) -> int:
        return -1 if self.lifecycle is None else self.lifecycle.broker_epoch

    def scram_server(self, mechanism: str) -> ScramServer:
        """A SCRAM exchange checked against the credentials in this node's metadata image."""
        mech = SCRAM_MECHANISMS[mechanism]

        def lookup(user: str) -> ScramCredential | None:
            record = self.image.scram.get((user, mech.wire_id))
            if record is None:
                return None
            return ScramCredential(
                record.salt, record.stored_key, record.server_key, record.iterations
            )

        return ScramServer(mech, lookup)

    def local_controller(self) -> QuorumController:
        """This node's own controller, for requests on the controller listener."""
        if self.quorum_controller is None:
            raise ControllerError(Errors.NOT_CONTROLLER, f"node {self.node_id} is no controller")
        return self.quorum_controller

    def voter_endpoints(self) -> dict[int, tuple[str, str, int]]:
        """node id -> (controller listener name, host, port) of each voter."""
        names = self.config["controller.listener.names"]
        if not names:
            return {}
        return {i: (names[0], h, p) for i, (h, p) in voters(self.config).items()}

    async def forward_describe_quorum(self, version: int, request: Any) -> Any:
        """DescribeQuorum answered by the active controller (a broker does not know the
        replicas' progress)."""
        if not isinstance(self.controller, ControllerRouter) or self.controller.remote is None:
            raise ControllerError(Errors.NOT_CONTROLLER, "no remote controller")
        return await self.controller.remote.forward(ApiKey.DESCRIBE_QUORUM, version, request)

    def controller_id_for_clients(self) -> int:
        """The ``controller_id`` of Metadata and DescribeCluster: as in KRaft, a live broker
        (clients send it admin requests, which any broker forwards), here this one."""
        me = self.image.brokers.get(self.node_id)
        if me is not None and not me.fenced:
            return self.node_id
        live = self.image.live_brokers()
        return random.choice(live).broker_id if live else -1

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Start the node's roles: the quorum (as a voter or an observer) and the controller,
        then, on a broker, registration, catching up with the metadata log, the logs and
        partitions this broker hosts, and serving clients once the controller unfences it."""
        cfg = self.config
        self.roles = roles(cfg)
        # A node with no voters configured (``make run``) is its own quorum without Raft; one
        # configured as the only voter runs Raft, since broker-only nodes fetch from it.
        sole = "controller" in self.roles and not voters(cfg)
        self.cluster_id = check_storage(
            log_dirs(cfg),
            self.node_id,
            configured_cluster_id=cfg["cluster.id"],
            may_self_format=is_sole_voter(cfg),
        )
        if self.metrics is not None:
            self.metrics.start()
        meta_log = self._load_logs()
        if sole:
            self.quorum = LocalQuorum(meta_log, self.node_id, self.clock)
        else:
            self.raft = self.quorum = self._raft_client(meta_log)
            self.raft.channels.security = self.controller_security
        self.quorum.register_listener(self.loader)
        if "controller" in self.roles:
            self.quorum_controller = QuorumController(
                self.node_id,
                self.cluster_id,
                self.quorum,
                self.loader,
                cfg,
                self.clock,
                bootstrap=read_bootstrap(log_dirs(cfg)[0]),
            )
            self.quorum_controller.replica_security = self.inter_broker_security
        remote = None
        if not sole:
            remote = RemoteController(
                self.node_id,
                voters(cfg),
                lambda: self.quorum.leader.leader_id,
                int(cfg["request.timeout.ms"]),
            )
            remote.channels.security = self.controller_security
        self.controller = ControllerRouter(self.quorum_controller, remote)
        controller_listeners = [x for x in self.listeners if x[0] in self.controller_listeners]
        if "controller" in self.roles and controller_listeners and not sole:
            # voters must reach each other before anything else can happen
            await self.socket_server.bind(controller_listeners, scope=CONTROLLER)
            await self.socket_server.serve([name for name, _, _ in controller_listeners])
        if isinstance(self.quorum, LocalQuorum):
            self.quorum.start()
        else:
            await self.quorum.start()
        legacy = self.image.cluster_id  # metadata logs written before meta.properties did
        if legacy is not None and legacy != self.cluster_id:
            raise StorageCheckError(
                f"The cluster id {legacy} of the metadata log does not match the cluster id "
                f"{self.cluster_id} in meta.properties"
            )
        if "broker" in self.roles:
            await self._start_broker(sole)
        self._start_background()
        log.info(
            "Brook node %d started as %s (cluster %s)",
            self.node_id,
            ",".join(sorted(self.roles)),
            self.cluster_id,
        )

    def _follow_image(self, _changes: Any) -> None:
        if self.replica_manager is not None:
            self.replica_manager.image = self.loader.image

    def _load_logs(self) -> PartitionLog:
        """Load the log directories; the metadata log must be among what loaded."""
        self.log_manager.startup()
        offline = self.log_manager.failures.offline_dirs()
        if offline and self.log_manager.get_log(METADATA_TOPIC, 0) is None:
            # The metadata log may be in a directory that failed to load: starting a new one
            # elsewhere would forget every topic (and set their logs aside as strays).
            raise OSError(
                "the metadata log is not in any log directory that loaded, and some failed: "
                + "; ".join(offline.values())
            )
        meta_log = self.log_manager.get_or_create_log(
            METADATA_TOPIC, 0, LogConfig.from_topic_config(METADATA_LOG_CONFIG), METADATA_TOPIC_ID
        )
        if offline:
            log.error(
                "serving without the offline log directories %s; restart once they are repaired",
                ", ".join(map(str, offline)),
            )
        loop = asyncio.get_running_loop()

        def on_failure(directory: Path) -> None:  # on whichever thread failed
            with contextlib.suppress(RuntimeError):  # the loop is closed: the node is gone
                loop.call_soon_threadsafe(self._on_log_dir_failure, directory)

        self.log_manager.failures.set_handler(on_failure)
        return meta_log

    def _raft_client(self, meta_log: PartitionLog) -> Any:
        from brook.raft.client import RaftClient, SnapshotPolicy
        from brook.raft.config import RaftConfig
        from brook.raft.partition_log import PartitionRaftLog
        from brook.raft.quorum_state import FileQuorumStateStore

        cfg = self.config
        raft_log = PartitionRaftLog(meta_log, deferred_flush=True)
        return RaftClient(
            self.node_id,
            voters(cfg),
            self.cluster_id,
            RaftConfig.from_server_config(cfg),
            raft_log,
            FileQuorumStateStore(Path(meta_log.dir) / "quorum-state"),
            self.clock,
            snapshot_policy=SnapshotPolicy(
                int(cfg["metadata.log.max.record.bytes.between.snapshots"]),
                int(cfg["metadata.log.max.snapshot.interval.ms"]),
                int(cfg["metadata.max.retention.bytes"]),
            ),
            snapshot_source=lambda: [encode(r) for r in self.image.snapshot_records()],
        )

    async def _start_broker(self, sole: bool) -> None:
        cfg = self.config
        client_listeners = [
            lst for lst in self.listeners if lst[0] not in self.controller_listeners or sole
        ]
        await self.socket_server.bind(client_listeners)
        endpoints = []
        for name, host, port in client_listeners:
            adv_host, adv_port = self.advertised.get(name, (host, port))
            bound_host, bound_port = self.socket_server.bound[name]
            endpoints.append(
                Endpoint(name, adv_host or bound_host or "127.0.0.1", adv_port or bound_port)
            )
        self.lifecycle = BrokerLifecycleManager(
            self.node_id,
            self.cluster_id,
            self.controller,
            lambda: self.loader.applied_offset,
            heartbeat_interval_ms=int(cfg["broker.heartbeat.interval.ms"]),
            registration_timeout_ms=int(cfg["initial.broker.registration.timeout.ms"]),
        )
        await self.lifecycle.start(endpoints, cfg["broker.rack"])
        # The partitions this broker hosts are known once its image has caught up with the
        # metadata log: loading them from a stale image could take a log it still hosts
        # for a stray one.
        await self.lifecycle.wait_caught_up()
        log.info(
            "metadata caught up at offset %d (%d record(s) skipped)",
            self.loader.applied_offset,
            self.loader.skipped,
        )
        self.replica_manager = ReplicaManager(self.node_id, cfg, self.log_manager, self.image)
        # group coordinator: loads groups as this node becomes leader of __consumer_offsets
        # partitions, so it hooks into the replica manager before partitions are applied
        self.group_coordinator = GroupCoordinator(self)
        self.replica_manager.add_leadership_listener(self.group_coordinator.on_leadership)
        self.group_coordinator.start()
        # transaction coordinator: loads __transaction_state partitions as this node leads them
        self.txn_coordinator = TransactionCoordinator(self)
        self.replica_manager.add_leadership_listener(self.txn_coordinator.on_leadership)
        self.txn_coordinator.start()
        # partition leaders verify a transaction's first batch with its coordinator (KIP-890)
        self.txn_verifier = TxnVerifier(self)
        self.replica_manager.start_isr_management(self.controller, lambda: self.broker_epoch)
        # the fetchers learn the partitions this broker follows as they are applied
        self.replica_fetchers = self._replica_fetcher_manager(self.replica_manager)
        self.replica_manager.add_role_listener(self.replica_fetchers.on_role_change)
        self.replica_manager.startup()
        self.replica_fetchers.start()
        self._start_log_cleaner(self.replica_manager)
        # A snapshot fetched while running replaces the loader's image: the replica manager
        # follows it before it hears of the changes, or it would decide on the old one.
        self.loader.add_publisher(self._follow_image)
        self.loader.add_publisher(self.replica_manager.on_metadata_changes)
        self._apply_fault_delays()
        self.loader.add_publisher(self._on_fault_configs)
        self.loader.add_publisher(self._forget_removed_topics)
        if self.quorum_controller is not None and sole:
            # A lone node creates a topic's logs before committing it, so a topic its disk
            # cannot hold is refused; a cluster's brokers create them as the metadata applies.
            self.quorum_controller.set_preparer(self.replica_manager.prepare_logs)
        self.lifecycle.ready()
        await self.lifecycle.wait_unfenced()
        self.producer_ids = ProducerIdManager(
            self.controller, self.node_id, lambda: self.broker_epoch
        )
        await self.socket_server.serve([name for name, _, _ in client_listeners])

    def _start_log_cleaner(self, rm: ReplicaManager) -> None:
        """The cleaner threads (log.cleaner.enable): they clean below each partition's high
        watermark, and hand their log changes to this loop."""
        config = CleanerConfig.from_server_config(self.config)
        if not config.enabled or config.threads <= 0:
            return
        loop = asyncio.get_running_loop()

        def on_loop(fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
            future: concurrent.futures.Future[Any] = concurrent.futures.Future()

            def run() -> None:
                if not future.set_running_or_notify_cancel():
                    return  # the cleaner stopped waiting for it
                try:
                    future.set_result(fn())
                except BaseException as exc:
                    future.set_exception(exc)

            loop.call_soon_threadsafe(run)
            return future

        def high_watermark(tp: tuple[str, int]) -> int | None:
            partition = rm.partitions.get(tp)
            return None if partition is None else partition.high_watermark

        self.log_cleaner = LogCleaner(
            self.log_manager,
            config,
            run_on_log_thread=on_loop,
            high_watermark=high_watermark,
            now_ms=self.clock,
        )
        # A cleaner thread holds the GIL while it decodes and maps records; the event loop,
        # waiting for it, gets it back after the interpreter's switch interval (5 ms by
        # default). 1 ms cut the produce latency p50 while a log is cleaned from 4.8 ms to
        # 0.8 ms (bench/log_cleaner.py); without contention the interval costs nothing.
        sys.setswitchinterval(min(sys.getswitchinterval(), _CLEANER_SWITCH_INTERVAL_S))
        self.log_cleaner.start()

    async def _stop_log_cleaner(self) -> None:
        if self.log_cleaner is not None:
            # Off the loop: a cleaner thread may be waiting for it to swap a segment in.
            await asyncio.to_thread(self.log_cleaner.stop)

    def _replica_fetcher_manager(self, rm: ReplicaManager) -> ReplicaFetcherManager:
        cfg = self.config
        settings = FetchSettings(
            replica_id=self.node_id,
            max_wait_ms=int(cfg["replica.fetch.wait.max.ms"]),
            min_bytes=int(cfg["replica.fetch.min.bytes"]),
            max_bytes=int(cfg["replica.fetch.response.max.bytes"]),
            partition_max_bytes=int(cfg["replica.fetch.max.bytes"]),
        )
        return ReplicaFetcherManager(
            self.node_id,
            FetcherConfig(
                settings,
                backoff_ms=int(cfg["replica.fetch.backoff.ms"]),
                request_timeout_ms=int(cfg["request.timeout.ms"]),
                security=self.inter_broker_security,
            ),
            int(cfg["num.replica.fetchers"]),
            image=lambda: self.image,
            listener_name=lambda: cfg["inter.broker.listener.name"],
            broker_epoch=lambda: self.broker_epoch,
            delay_ms=lambda: self.fault_follower_fetch_delay_ms,
            clock=self.clock,
            hosted=rm.partitions.get,
            replicated=self.counters.replicated,
        )

    def _on_log_dir_failure(self, directory: Path) -> None:
        """A log directory went offline (Kafka's LogDirFailureHandler). Kafka halts when the
        metadata log's directory or the last directory fails; Brook stays up and answers
        KAFKA_STORAGE_ERROR for what it can no longer do (see docs/design.md)."""
        self.replica_manager.on_log_dir_failure(directory)
        if self.quorum.log.log_dir == directory:
            log.error(
                "The metadata log's directory %s is offline: this node takes no more metadata "
                "changes (topic creation and deletion, configs, producer ids); restart it once "
                "the directory is repaired",
                directory,
            )
        if not self.log_manager.online_dirs():
            log.error(
                "Every log directory is offline (%s): this node takes no more writes; it keeps "
                "answering with KAFKA_STORAGE_ERROR until it is restarted",
                ", ".join(map(str, self.log_manager.log_dirs)),
            )

    def _forget_removed_topics(self, changes: list[Change]) -> None:
        """A deleted topic's counters go with it, as Kafka removes its BrokerTopicMetrics."""
        for change in changes:
            if isinstance(change, TopicRemoved):
                self.counters.forget_topic(change.topic.name)

    def _on_fault_configs(self, changes: list[Change]) -> None:
        if faults.concerns_node(changes, self.node_id):
            self._apply_fault_delays()

    def _apply_fault_delays(self) -> None:
        delays = faults.fault_delays(self.config, self.image, self.node_id)
        if (delays.produce_ms, delays.follower_fetch_ms) != (
            self.fault_produce_delay_ms,
            self.fault_follower_fetch_delay_ms,
        ):
            log.info(
                "fault injection: produce delay %d ms, follower fetch delay %d ms",
                delays.produce_ms,
                delays.follower_fetch_ms,
            )
        self.fault_produce_delay_ms = delays.produce_ms
        self.fault_follower_fetch_delay_ms = delays.follower_fetch_ms

    def bound_port(self, listener: str | None = None) -> int:
        name = listener or next(iter(self.socket_server.bound))
        return self.socket_server.bound[name][1]

    async def stop(self) -> None:
        # Background jobs finish what they are doing (a checkpoint half-written by a worker
        # thread must not race the final one), then stop.
        if self.metrics is not None:
            await self.metrics.stop()
        self._stopping.set()
        await asyncio.gather(*self._tasks)
        if self.lifecycle is not None:
            await self._controlled_shutdown()
            await self.lifecycle.stop()
        if self.raft is not None:
            await self.raft.shutdown(int(self.config["controller.quorum.request.timeout.ms"]))
        await self.socket_server.stop()
        if self.group_coordinator is not None:
            await self.group_coordinator.stop()
        if self.txn_coordinator is not None:
            await self.txn_coordinator.stop()
        if self.txn_verifier is not None:
            await self.txn_verifier.stop()
        if self.replica_fetchers is not None:
            await self.replica_fetchers.stop()  # no append may race the logs closing
        await self._stop_log_cleaner()
        if self.replica_manager is not None:
            self.replica_manager.shutdown()
        if isinstance(self.controller, ControllerRouter) and self.controller.remote is not None:
            self.controller.remote.close()
        self.log_manager.shutdown()
        offline = self.log_manager.failures.offline_dirs()
        if offline:
            log.warning(
                "Brook node %d stopped; the offline log directories %s are recovered at the "
                "next start, as after a crash",
                self.node_id,
                ", ".join(map(str, offline)),
            )
        else:
            log.info("Brook node %d stopped cleanly", self.node_id)

    async def abort(self) -> None:
        """Stop a node whose start failed or was interrupted: close its connections and
        tasks, write nothing (no checkpoints, no clean-shutdown marker), as a crash would."""
        self._stopping.set()
        for task in self._tasks:
            task.cancel()
        if self.replica_fetchers is not None:
            await self.replica_fetchers.stop()
        await self._stop_log_cleaner()
        if self.lifecycle is not None:
            await self.lifecycle.stop()
        if self.raft is not None:
            await self.raft.close()
        await self.socket_server.stop()
        if isinstance(self.controller, ControllerRouter) and self.controller.remote is not None:
            self.controller.remote.close()
        self.log_manager.close_files()
        if self.metrics is not None:
            await self.metrics.stop()
        log.info("Brook node %d stopped without finishing its start", self.node_id)

    async def _controlled_shutdown(self) -> None:
        """SIGTERM on a broker (controlled.shutdown.enable): let the controller move this
        broker's leaderships to other brokers before it goes. Alone in the cluster there is
        nowhere to move them, and nothing is done."""
        assert self.lifecycle is not None
        others = [b for b in self.image.live_brokers() if b.broker_id != self.node_id]
        if not self.config["controlled.shutdown.enable"] or not others:
            return
        timeout_s = int(self.config["broker.session.timeout.ms"]) / 1000
        if await self.lifecycle.controlled_shutdown(timeout_s):
            log.info("controlled shutdown of broker %d done: its leaderships moved", self.node_id)
        else:
            log.warning(
                "controlled shutdown of broker %d did not finish within %.0f s; stopping anyway",
                self.node_id,
                timeout_s,
            )

    # ------------------------------------------------------------------ background work
    def _start_background(self) -> None:
        cfg = self.config
        self._every(200, self._flush_due)
        self._every(int(cfg["log.retention.check.interval.ms"]), self._retention)
        self._every(int(cfg["replica.high.watermark.checkpoint.interval.ms"]), self._checkpoint_hw)
        self._every(
            int(cfg["log.flush.offset.checkpoint.interval.ms"]) or 60000, self._checkpoint_recovery
        )
        idle_ms = int(cfg["connections.max.idle.ms"])
        if idle_ms > 0:
            self._every(max(100, min(idle_ms, 10_000)), self._close_idle_connections)

    def _every(self, interval_ms: int, job: Callable[[], Awaitable[None]]) -> None:
        async def loop() -> None:
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), interval_ms / 1000)
                if self._stopping.is_set():
                    return
                try:
                    await job()
                except Exception:
                    log.exception("background job %s failed", job.__name__)

        self._tasks.append(asyncio.get_running_loop().create_task(loop()))

    async def _flush_due(self) -> None:
        for plog in self.log_manager.flush_due(_now_ms()):
            with contextlib.suppress(KafkaError):  # its directory is offline now
                await asyncio.to_thread(plog.flush)

    async def _retention(self) -> None:
        if self.replica_manager is None:
            return
        deleted = self.replica_manager.run_retention()
        if deleted:
            log.info("retention deleted %d segment(s)", deleted)

    async def _close_idle_connections(self) -> None:
        self.socket_server.close_idle(int(self.config["connections.max.idle.ms"]))

    # Checkpoints are snapshotted here and written (with their fsyncs) on a worker thread.
    async def _checkpoint_hw(self) -> None:
        if self.replica_manager is None:
            return
        files = self.log_manager.high_watermark_files(self.replica_manager.high_watermarks())
        await asyncio.to_thread(self.log_manager.write_checkpoints, files)

    async def _checkpoint_recovery(self) -> None:
        files = self.log_manager.recovery_checkpoint_files()
        await asyncio.to_thread(self.log_manager.write_checkpoints, files)
