"""Kafka's own authorizer settings in a server.properties file, unchanged: the node starts
with them and enforces them (a PLAINTEXT client is User:ANONYMOUS, as in Kafka)."""

from __future__ import annotations

from pathlib import Path

from rawclient import RawClient
from support import BrookProcess, free_port, python_exe

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

KAFKA_LINES = """\
process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://127.0.0.1:{port}
log.dirs={data}
offsets.topic.replication.factor=1
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
allow.everyone.if.no.acl.found={open}
"""


class FileConfiguredBroker(BrookProcess):
    """``brook server --config FILE``, as a Kafka deployment starts it."""

    def __init__(self, data_dir: Path, config: Path, port: int) -> None:
        super().__init__(data_dir, port=port)
        self.config = config

    def command(self) -> list[str]:
        return [python_exe(), "-m", "brook.cli.main", "server", "--config", str(self.config)]


def _create_topic(raw: RawClient, name: str) -> int:
    request = {
        "topics": [
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout": 30000,
        "validate_only": False,
    }
    return int(raw.request(ApiKey.CREATE_TOPICS, 7, request).topics[0].error_code)


def _start(tmp_path: Path, allow_if_no_acl: bool) -> FileConfiguredBroker:
    port = free_port()
    data = tmp_path / "data"
    config = tmp_path / "server.properties"
    text = KAFKA_LINES.format(port=port, data=data, open=str(allow_if_no_acl).lower())
    config.write_text(text)
    return FileConfiguredBroker(data, config, port)


def test_kafkas_settings_deny_an_anonymous_client(tmp_path: Path) -> None:
    with _start(tmp_path, allow_if_no_acl=False) as broker, RawClient(broker.bootstrap) as raw:
        assert _create_topic(raw, "t") == Errors.TOPIC_AUTHORIZATION_FAILED
        acls = raw.request(ApiKey.CREATE_ACLS, 3, {"creations": []})
        assert acls.results == ()
        filters = {
            "resource_type_filter": 1,
            "resource_name_filter": None,
            "pattern_type_filter": 1,
            "principal_filter": None,
            "host_filter": None,
            "operation": 1,
            "permission_type": 1,
        }
        described = raw.request(ApiKey.DESCRIBE_ACLS, 3, filters)
        assert described.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED


def test_allow_everyone_if_no_acl_found_opens_what_no_acl_names(tmp_path: Path) -> None:
    with _start(tmp_path, allow_if_no_acl=True) as broker, RawClient(broker.bootstrap) as raw:
        assert _create_topic(raw, "t") == Errors.NONE
