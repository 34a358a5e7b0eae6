"""The ``brook.fault.*`` delays reach a running broker through IncrementalAlterConfigs, sent
over TCP by Brook's admin client, without a restart: the node's own resource wins over the
cluster default, which wins over server.properties; a bad value changes nothing.

The broker runs in this process so the test can read the values the broker object holds
(the follower fetch delay has no follower to slow on one node); the produce delay's effect on
the wire is checked against a real process in tests/integration/cli/test_cluster_cli.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from brook.broker.server import Broker
from brook.client.admin import (
    AdminError,
    AlterConfigOp,
    AlterConfigOpType,
    AsyncAdmin,
    ConfigResource,
)
from brook.config.server import FOLLOWER_FETCH_DELAY_KEY, PRODUCE_DELAY_KEY, parse_server_config
from brook.protocol.errors import Errors


def test_fault_delays_reach_the_running_broker(tmp_path: Path) -> None:
    async def run() -> None:
        config = parse_server_config(
            {
                "listeners": "PLAINTEXT://127.0.0.1:0",
                "log.dirs": str(tmp_path / "data"),
                PRODUCE_DELAY_KEY: "5",
            }
        )
        broker = Broker(config)
        await broker.start()
        admin = AsyncAdmin({"bootstrap.servers": f"127.0.0.1:{broker.bound_port()}"})
        try:
            await admin.start()

            def delays() -> tuple[int, int]:
                return broker.fault_produce_delay_ms, broker.fault_follower_fetch_delay_ms

            async def alter(scope: str, *ops: AlterConfigOp) -> None:
                await admin.incremental_alter_configs({ConfigResource.broker(scope): ops})

            assert delays() == (5, 0)
            await alter("1", AlterConfigOp(FOLLOWER_FETCH_DELAY_KEY, "300"))
            assert delays() == (5, 300)
            await alter(
                "",
                AlterConfigOp(PRODUCE_DELAY_KEY, "40"),
                AlterConfigOp(FOLLOWER_FETCH_DELAY_KEY, "100"),
            )
            assert delays() == (40, 300)  # the node's own value wins over the default
            await alter(
                "1", AlterConfigOp(FOLLOWER_FETCH_DELAY_KEY, None, AlterConfigOpType.DELETE)
            )
            assert delays() == (40, 100)
            with pytest.raises(AdminError) as refused:
                await alter("1", AlterConfigOp(PRODUCE_DELAY_KEY, "-1"))
            assert refused.value.code == Errors.INVALID_REQUEST
            assert delays() == (40, 100)
        finally:
            await admin.close()
            await broker.stop()

    asyncio.run(run())
