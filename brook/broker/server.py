"""A Brook node: wires the log manager, the metadata quorum and image, the controller, the
replica manager, the fetch session cache and the listeners, and runs the background work
(flushing, retention, checkpoints). ``Broker`` is what request handlers see as ``ctx.broker``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from brook.config.defs import Config
from brook.config.server import log_dirs, node_id, parse_listener, topic_defaults
from brook.log.config import LogConfig
from brook.log.manager import LogManager
from brook.metadata.controller import Controller
from brook.metadata.image import MetadataImage
from brook.metadata.quorum import LocalQuorum
from brook.metadata.records import METADATA_TOPIC, METADATA_TOPIC_ID, Endpoint
from brook.metadata.service import MetadataService
from brook.protocol.errors import KafkaError

from . import handlers  # noqa: F401  (registers every API handler)
from .fetch_session import FetchSessionCache
from .group.coordinator import GroupCoordinator
from .network import SocketServer
from .producer_ids import ProducerIdManager
from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)

METADATA_LOG_CONFIG = {
    "retention.ms": -1,
    "retention.bytes": -1,
    "segment.bytes": 64 * 1024 * 1024,
    "max.message.bytes": 8 * 1024 * 1024,
}


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
        self.image = MetadataImage()
        self.socket_server = SocketServer(self)
        self.fetch_sessions = FetchSessionCache(
            int(config["max.incremental.fetch.session.cache.slots"])
        )
        self.fault_produce_delay_ms = int(config["brook.fault.produce.delay.ms"])
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()
        self.metadata: MetadataService
        self.replica_manager: ReplicaManager
        self.producer_ids: ProducerIdManager
        self.group_coordinator: GroupCoordinator
        self.broker_epoch = -1

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
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
        controller = Controller(self.image, self.config)
        self.metadata = MetadataService(LocalQuorum(meta_log, self.node_id), controller)
        self.metadata.replay()
        meta = self.log_manager.read_meta_properties()
        cluster_id = await self.metadata.bootstrap(
            self.config["cluster.id"] or meta.get("cluster.id")
        )
        if meta.get("cluster.id") not in (None, cluster_id):
            raise RuntimeError(
                f"The cluster id {cluster_id} of the metadata log does not match the cluster id "
                f"{meta.get('cluster.id')} in meta.properties"
            )
        self.log_manager.write_meta_properties(
            {"version": "1", "node.id": str(self.node_id), "cluster.id": cluster_id}
        )
        self.replica_manager = ReplicaManager(
            self.node_id, self.config, self.log_manager, self.image
        )
        # group coordinator: loads groups as this node becomes leader of __consumer_offsets
        # partitions, so it hooks into the replica manager before partitions are applied
        self.group_coordinator = GroupCoordinator(self)
        self.replica_manager.add_leadership_listener(self.group_coordinator.on_leadership)
        self.group_coordinator.start()
        self.replica_manager.startup()
        self.metadata.add_listener(self.replica_manager.on_metadata_changes)
        self.metadata.set_preparer(self.replica_manager.prepare_logs)
        loop = asyncio.get_running_loop()

        def on_failure(directory: Path) -> None:  # on whichever thread failed
            with contextlib.suppress(RuntimeError):  # the loop is closed: the node is gone
                loop.call_soon_threadsafe(self._on_log_dir_failure, directory)

        self.log_manager.failures.set_handler(on_failure)
        client_listeners = [
            lst
            for lst in self.listeners
            if lst[0] not in self.controller_listeners or len(self.listeners) == 1
        ]
        await self.socket_server.start(client_listeners)
        endpoints = []
        for name, host, port in client_listeners:
            adv_host, adv_port = self.advertised.get(name, (host, port))
            bound_host, bound_port = self.socket_server.bound[name]
            endpoints.append(
                Endpoint(name, adv_host or bound_host or "127.0.0.1", adv_port or bound_port)
            )
        self.broker_epoch = await self.metadata.register_broker(
            self.node_id, endpoints, self.config["broker.rack"]
        )
        self.producer_ids = ProducerIdManager(self.metadata, self.node_id, self.broker_epoch)
        self._start_background()
        log.info("Brook node %d started (cluster %s)", self.node_id, cluster_id)

    def _on_log_dir_failure(self, directory: Path) -> None:
        """A log directory went offline (Kafka's LogDirFailureHandler). Kafka halts when the
        metadata log's directory or the last directory fails; Brook stays up and answers
        KAFKA_STORAGE_ERROR for what it can no longer do (see docs/design.md)."""
        self.replica_manager.on_log_dir_failure(directory)
        if self.metadata.quorum.log.log_dir == directory:
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

    def bound_port(self, listener: str | None = None) -> int:
        name = listener or next(iter(self.socket_server.bound))
        return self.socket_server.bound[name][1]

    async def stop(self) -> None:
        # Background jobs finish what they are doing (a checkpoint half-written by a worker
        # thread must not race the final one), then stop.
        self._stopping.set()
        await asyncio.gather(*self._tasks)
        await self.socket_server.stop()
        await self.group_coordinator.stop()
        self.replica_manager.shutdown()
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
        deleted = self.replica_manager.run_retention()
        if deleted:
            log.info("retention deleted %d segment(s)", deleted)

    async def _close_idle_connections(self) -> None:
        self.socket_server.close_idle(int(self.config["connections.max.idle.ms"]))

    # Checkpoints are snapshotted here and written (with their fsyncs) on a worker thread.
    async def _checkpoint_hw(self) -> None:
        files = self.log_manager.high_watermark_files(self.replica_manager.high_watermarks())
        await asyncio.to_thread(self.log_manager.write_checkpoints, files)

    async def _checkpoint_recovery(self) -> None:
        files = self.log_manager.recovery_checkpoint_files()
        await asyncio.to_thread(self.log_manager.write_checkpoints, files)
