"""The top-level ``brook`` package: the client and its admin types import from it, as they do
from confluent_kafka / confluent_kafka.admin and kafka / kafka.admin, and importing it alone
loads no client code."""

from __future__ import annotations

import subprocess
import sys

import confluent_kafka
import confluent_kafka.admin
import kafka
import kafka.admin
import pytest
from support import env_with_repo

import brook
import brook.client
import brook.client.admin
from brook.protocol.errors import KafkaError


def test_the_admin_types_import_from_the_top_level() -> None:
    from brook import (
        AlterConfigOp,
        ConfigResource,
        ConfigResourceType,
        NewPartitions,
        NewTopic,
        OffsetSpec,
    )

    assert NewTopic is brook.client.admin.NewTopic
    assert NewPartitions is brook.client.admin.NewPartitions
    assert ConfigResource is brook.client.admin.ConfigResource
    assert ConfigResourceType is brook.client.admin.ConfigResourceType
    assert AlterConfigOp is brook.client.admin.AlterConfigOp
    assert OffsetSpec is brook.client.admin.OffsetSpec
    assert brook.KafkaError is KafkaError
    assert brook.Producer is brook.client.Producer
    assert brook.TopicPartition is brook.client.TopicPartition


def test_what_the_other_clients_export_brook_exports_under_the_same_name() -> None:
    theirs = {
        name
        for module in (confluent_kafka, confluent_kafka.admin, kafka, kafka.admin)
        for name in dir(module)
        if name[:1].isupper()
    }
    ours = {name for module in (brook.client, brook.client.admin) for name in module.__all__} | {
        "KafkaError"
    }
    # Brook's ClusterMetadata is its client's metadata cache, not confluent-kafka's
    # list_topics() result: the same name for another thing stays out of the top level.
    shared = (theirs & ours) - {"ClusterMetadata"}
    assert {"NewTopic", "NewPartitions", "ConfigResource", "OffsetSpec", "TopicPartition"} <= shared
    assert shared <= set(brook.__all__)
    for name in brook.__all__:
        assert getattr(brook, name) is not None
    assert set(brook.__all__) <= set(dir(brook))


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = brook.Nope  # type: ignore[attr-defined]


def test_importing_brook_loads_no_client_code() -> None:
    probe = "import brook, sys; print(any(m.startswith('brook.client') for m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env_with_repo()
    )
    assert (done.stdout, done.stderr) == ("False\n", "")
