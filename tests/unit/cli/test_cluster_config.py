"""``brook cluster``'s layouts: the server.properties it writes for N nodes, read back as a node
reads them (voters, roles, listeners, ports), the storage it formats and its state file.
No process is started."""

from __future__ import annotations

from pathlib import Path

import pytest

from brook.cli.cluster_config import ClusterError, plan_roles
from brook.cli.local_cluster import LocalCluster
from brook.config.defs import Config, load_properties
from brook.config.server import log_dirs, node_id, parse_listener, parse_server_config, voters
from brook.log.checkpoints import read_properties

BOTH = ("broker", "controller")


def _configs(cluster: LocalCluster) -> dict[int, Config]:
    return {
        n.node_id: parse_server_config(load_properties(n.config_path.read_text()))
        for n in cluster.nodes
    }


def _listeners(cfg: Config) -> dict[str, tuple[str, int]]:
    return {name: (host, port) for name, host, port in map(parse_listener, cfg["listeners"])}


def _check_cluster(cluster: LocalCluster, expected_roles: dict[int, tuple[str, ...]]) -> None:
    """What every layout must satisfy, node by node."""
    configs = _configs(cluster)
    assert sorted(configs) == sorted(expected_roles)
    controller_ports = {}
    all_ports = []
    for nid, cfg in configs.items():
        node = cluster.node(nid)
        assert node_id(cfg) == nid
        assert tuple(cfg["process.roles"]) == expected_roles[nid]
        listeners = _listeners(cfg)
        wanted = {
            name
            for role, name in (("broker", "PLAINTEXT"), ("controller", "CONTROLLER"))
            if role in expected_roles[nid]
        }
        assert set(listeners) == wanted
        assert all(host == "127.0.0.1" for host, _ in listeners.values())
        assert {name: port for name, (_, port) in listeners.items()} == node.ports
        all_ports += [port for _, port in listeners.values()]
        if "CONTROLLER" in listeners:
            controller_ports[nid] = listeners["CONTROLLER"][1]
        assert cfg["controller.listener.names"] == ["CONTROLLER"]
        if "broker" in expected_roles[nid]:
            assert cfg["inter.broker.listener.name"] == "PLAINTEXT"
        assert log_dirs(cfg) == [str(cluster.directory / f"node-{nid}" / "data")]
        meta = read_properties(Path(log_dirs(cfg)[0]) / "meta.properties")
        assert meta["cluster.id"] == cluster.cluster_id and meta["node.id"] == str(nid)
    assert len(all_ports) == len(set(all_ports)), "every listener has a port of its own"
    # every node names the same voters: the controllers, at their controller listeners
    expected_voters = {nid: ("127.0.0.1", port) for nid, port in controller_ports.items()}
    assert set(expected_voters) == {
        nid for nid, roles in expected_roles.items() if "controller" in roles
    }
    for cfg in configs.values():
        assert voters(cfg) == expected_voters
    brokers = [nid for nid, roles in expected_roles.items() if "broker" in roles]
    assert cluster.bootstrap_servers == ",".join(
        f"127.0.0.1:{cluster.node(nid).ports['PLAINTEXT']}" for nid in brokers
    )
    reopened = LocalCluster.open(cluster.directory)
    assert reopened.layout == cluster.layout and reopened.cluster_id == cluster.cluster_id
    assert [n.ports for n in reopened.nodes] == [n.ports for n in cluster.nodes]


def test_three_combined_nodes(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "c", nodes=3)
    _check_cluster(cluster, {1: BOTH, 2: BOTH, 3: BOTH})


def test_three_controllers_and_two_brokers(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "c", controllers=3, brokers=2)
    roles = {1: ("controller",), 2: ("controller",), 3: ("controller",)}
    _check_cluster(cluster, {**roles, 4: ("broker",), 5: ("broker",)})
    assert "inter.broker.listener.name" not in load_properties(
        cluster.node(1).config_path.read_text()
    )


def test_four_nodes_three_of_them_controllers(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "c", nodes=4, controllers=3)
    _check_cluster(cluster, {1: BOTH, 2: BOTH, 3: BOTH, 4: ("broker",)})


def test_default_layout_and_single_node() -> None:
    assert plan_roles() == [(1, BOTH), (2, BOTH), (3, BOTH)]
    assert plan_roles(nodes=1) == [(1, BOTH)]
    assert plan_roles(nodes=2, controllers=2) == [(1, BOTH), (2, BOTH)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": 0}, "--nodes must be at least 1"),
        ({"nodes": 3, "controllers": 4}, "--controllers must be between 1 and --nodes (3)"),
        ({"nodes": 3, "controllers": 0}, "--controllers must be between 1 and --nodes (3)"),
        ({"nodes": 3, "brokers": 2}, "--brokers goes with --controllers"),
        ({"controllers": 3}, "--controllers and --brokers go together"),
        ({"brokers": 3}, "--controllers and --brokers go together"),
        ({"controllers": 0, "brokers": 1}, "must each be at least 1"),
    ],
)
def test_impossible_layouts_are_refused(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ClusterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan_roles(**kwargs)


def test_overrides_go_to_every_node(tmp_path: Path) -> None:
    cluster = LocalCluster.create(
        tmp_path / "c", nodes=2, overrides={"num.partitions": "4", "log.segment.bytes": "4096"}
    )
    for cfg in _configs(cluster).values():
        assert cfg["num.partitions"] == 4 and cfg["log.segment.bytes"] == 4096
    assert LocalCluster.open(cluster.directory).overrides == cluster.overrides


@pytest.mark.parametrize(
    ("layout", "replicas"),
    [
        ({"nodes": 1}, 1),
        ({"nodes": 2}, 2),
        ({"nodes": 3}, 3),
        ({"controllers": 3, "brokers": 4}, 3),
    ],
)
def test_offsets_topic_replicas_fit_the_brokers(
    tmp_path: Path, layout: dict[str, int], replicas: int
) -> None:
    cluster = LocalCluster.create(tmp_path / "c", **layout)  # type: ignore[arg-type]
    for cfg in _configs(cluster).values():
        assert cfg["offsets.topic.replication.factor"] == replicas
    overridden = LocalCluster.create(
        tmp_path / "o", **layout, overrides={"offsets.topic.replication.factor": "1"}
    )  # type: ignore[arg-type]
    assert all(
        cfg["offsets.topic.replication.factor"] == 1 for cfg in _configs(overridden).values()
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"listeners": "PLAINTEXT://127.0.0.1:9092"}, "sets listeners for each node itself"),
        ({"node.id": "7"}, "sets node.id for each node itself"),
        ({"log.retension.ms": "5"}, "Unknown server configuration 'log.retension.ms'"),
        ({"num.partitions": "many"}, "num.partitions"),
    ],
)
def test_bad_overrides_are_refused_before_anything_is_written(
    tmp_path: Path, overrides: dict[str, str], message: str
) -> None:
    with pytest.raises(ClusterError, match=message):
        LocalCluster.create(tmp_path / "c", nodes=2, overrides=overrides)
    assert not (tmp_path / "c").exists()


def test_a_directory_holds_one_cluster(tmp_path: Path) -> None:
    LocalCluster.create(tmp_path / "c", nodes=1)
    with pytest.raises(ClusterError, match="already holds a cluster"):
        LocalCluster.create(tmp_path / "c", nodes=1)
    with pytest.raises(ClusterError, match="no cluster in"):
        LocalCluster.open(tmp_path / "elsewhere")


def test_a_laid_out_cluster_runs_nothing(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "c", nodes=2)
    assert [s.state for s in cluster.status()] == ["dead", "dead"]
    with pytest.raises(ClusterError, match="node 2 is not running"):
        cluster.kill(2)
    with pytest.raises(ClusterError, match="unknown node id 9: the cluster's nodes are 1, 2"):
        cluster.pause(9)


def test_a_cluster_with_metrics_gives_each_node_its_own_endpoint(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "c", nodes=3, metrics=True)
    urls = [n.metrics_url for n in cluster.nodes]
    assert all(urls) and len(set(urls)) == 3
    for node in cluster.nodes:
        cfg = parse_server_config(load_properties(node.config_path.read_text()))
        assert f"{cfg['metrics.prometheus.listener']}/metrics" == node.metrics_url
        assert all("METRICS" not in listener for listener in cfg["listeners"])
    reopened = LocalCluster.open(tmp_path / "c")
    assert [n.metrics_url for n in reopened.nodes] == urls


def test_a_cluster_without_metrics_has_no_endpoint_and_one_value_for_all_is_refused(
    tmp_path: Path,
) -> None:
    cluster = LocalCluster.create(tmp_path / "c", nodes=1)
    assert cluster.nodes[0].metrics_url is None
    assert "metrics.prometheus.listener" not in cluster.nodes[0].config_path.read_text()
    with pytest.raises(ClusterError, match=r"metrics\.prometheus\.listener"):
        LocalCluster.create(
            tmp_path / "d", nodes=1, overrides={"metrics.prometheus.listener": "http://h:1"}
        )
