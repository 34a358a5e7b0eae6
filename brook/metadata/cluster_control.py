"""The controller's broker lifecycle decisions, as KRaft's ClusterControlManager and the
broker-event half of ReplicationControlManager make them: registration, fencing, unfencing and
controlled shutdown, each as the metadata records that carry it out.

Pure over the controller's image. When a broker leaves (fenced, or shutting down), it leaves
every ISR it was in and every partition it led gets a new leader (ONLINE election: the first
acceptable replica of the ISR in assignment order; the ISR never empties, so a partition whose
last ISR member left keeps it and has no leader). When a broker is unfenced, leaderless
partitions whose ISR holds it elect it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from brook.config.defs import ConfigError
from brook.config.topic import TOPIC_CONFIG
from brook.protocol.errors import Errors

from .controller_api import BrokerRegistration, ControllerError
from .image import BrokerInfo, MetadataImage
from .partition_change import Election, partition_change
from .records import (
    NO_LEADER,
    BrokerRegistrationChangeRecord,
    MetadataRecord,
    RegisterBrokerRecord,
)


class ClusterControl:
    def __init__(self, image: MetadataImage, server_config: Mapping[str, Any]) -> None:
        self.image = image
        self.server_config = server_config

    # ------------------------------------------------------------------ who may lead
    def acceptable(self, broker_id: int, leaving: int | None = None) -> bool:
        broker = self.image.brokers.get(broker_id)
        return (
            broker is not None
            and broker_id != leaving
            and not broker.fenced
            and not broker.in_controlled_shutdown
        )

    def unclean_allowed(self, topic: str) -> bool:
        raw = self.image.topic_configs(topic).get("unclean.leader.election.enable")
        if raw is not None:
            try:
                return bool(TOPIC_CONFIG.parse_one("unclean.leader.election.enable", raw))
            except ConfigError:
                pass
        return bool(self.server_config["unclean.leader.election.enable"])

    def leads_partitions(self, broker_id: int) -> bool:
        return any(
            info.leader == broker_id
            for topic in self.image.topics.values()
            for info in topic.partitions.values()
        )

    # ------------------------------------------------------------------ registration
    def register(
        self,
        reg: BrokerRegistration,
        next_offset: int,
        cluster_id: str,
        live_session: bool,
    ) -> tuple[list[MetadataRecord], int]:
        """(records, broker epoch). A new incarnation's epoch is the offset its
        RegisterBrokerRecord will have; the same incarnation keeps its epoch."""
        if reg.cluster_id != cluster_id:
            raise ControllerError(
                Errors.INCONSISTENT_CLUSTER_ID,
                f"Expected cluster ID {cluster_id}, but got cluster ID {reg.cluster_id}",
            )
        existing = self.image.brokers.get(reg.broker_id)
        if (
            existing is not None
            and existing.incarnation_id != reg.incarnation_id
            and live_session
            and not existing.fenced
        ):
            raise ControllerError(
                Errors.DUPLICATE_BROKER_REGISTRATION,
                f"Another broker is registered with that broker id {reg.broker_id}.",
            )
        if existing is not None and existing.incarnation_id == reg.incarnation_id:
            epoch = existing.broker_epoch
            fenced = existing.fenced
        else:
            epoch = next_offset
            fenced = True
        record = RegisterBrokerRecord(
            reg.broker_id,
            reg.incarnation_id,
            epoch,
            reg.endpoints,
            reg.rack,
            fenced=fenced,
            features=reg.features,
        )
        records: list[MetadataRecord] = [record]
        if existing is not None and epoch != existing.broker_epoch:
            # a new incarnation: whatever the old one led is elected afresh
            records.extend(self._leave(existing.broker_id, remove_from_isr=False))
        return records, epoch

    # ------------------------------------------------------------------ broker events
    def fence(self, broker: BrokerInfo) -> list[MetadataRecord]:
        records: list[MetadataRecord] = [
            BrokerRegistrationChangeRecord(broker.broker_id, broker.broker_epoch, fenced=True)
        ]
        records.extend(self._leave(broker.broker_id, remove_from_isr=True))
        return records

    def unfence(self, broker: BrokerInfo) -> list[MetadataRecord]:
        records: list[MetadataRecord] = [
            BrokerRegistrationChangeRecord(
                broker.broker_id,
                broker.broker_epoch,
                fenced=False,
                in_controlled_shutdown=False if broker.in_controlled_shutdown else None,
            )
        ]
        me = broker.broker_id

        def acceptable(b: int) -> bool:
            return b == me or self.acceptable(b)

        for topic in self.image.topics.values():
            for info in topic.partitions.values():
                if info.leader == NO_LEADER and me in info.replicas:
                    change = partition_change(
                        info,
                        acceptable=acceptable,
                        unclean_allowed=self.unclean_allowed(topic.name),
                    )
                    if change is not None:
                        records.append(change)
        return records

    def controlled_shutdown(self, broker: BrokerInfo) -> list[MetadataRecord]:
        records: list[MetadataRecord] = [
            BrokerRegistrationChangeRecord(
                broker.broker_id, broker.broker_epoch, in_controlled_shutdown=True
            )
        ]
        records.extend(self._leave(broker.broker_id, remove_from_isr=True))
        return records

    def _leave(self, broker_id: int, remove_from_isr: bool) -> list[MetadataRecord]:
        """Move leaderships off ``broker_id`` (and take it out of ISRs)."""
        records: list[MetadataRecord] = []

        def acceptable(b: int) -> bool:
            return self.acceptable(b, leaving=broker_id)

        for topic in self.image.topics.values():
            for info in topic.partitions.values():
                in_isr = broker_id in info.isr
                if info.leader != broker_id and not (remove_from_isr and in_isr):
                    continue
                target = (
                    tuple(r for r in info.isr if r != broker_id) if remove_from_isr else info.isr
                )
                change = partition_change(
                    info,
                    target_isr=target,
                    acceptable=acceptable,
                    election=Election.ONLINE,
                    unclean_allowed=self.unclean_allowed(topic.name),
                )
                if change is not None:
                    records.append(change)
        return records
