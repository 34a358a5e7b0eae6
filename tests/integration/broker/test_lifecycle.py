"""Starting, stopping and restarting a node: configuration errors, clean shutdown, recovery."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess, env_with_repo, free_port, wait_for_port

from brook.protocol.records import build_simple_batch, iter_records


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "brook.cli.main", "server", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env_with_repo(),
    )


def test_unknown_and_bad_config_keys_are_rejected_by_name(tmp_path: Path) -> None:
    result = _run("--override", "log.dirs=" + str(tmp_path), "--override", "log.retension.ms=5")
    assert result.returncode == 2 and "log.retension.ms" in result.stderr
    result = _run("--override", "num.partitions=many")
    assert result.returncode == 2 and "num.partitions" in result.stderr
    props = tmp_path / "server.properties"
    props.write_text("node.id=1\nsocket.request.max.byte=10\n")
    result = _run("--config", str(props))
    assert result.returncode == 2 and "socket.request.max.byte" in result.stderr


def _topic_id(c: RawClient, topic: str) -> object:
    meta = c.request(
        3,
        12,
        {
            "topics": [{"name": topic, "topic_id": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    assert meta.topics[0].error_code == 0
    return meta.topics[0].topic_id


def test_sigint_stops_cleanly_and_restart_keeps_data(
    brook: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook.bootstrap) as c:
        topic_id = create_topic(c, unique_topic, partitions=2).topics[0].topic_id
        for i in range(20):
            produce(c, unique_topic, i % 2, build_simple_batch([f"m{i}".encode()]))
    assert brook.proc is not None
    brook.proc.send_signal(signal.SIGINT)
    assert brook.proc.wait(30) == 0
    brook.proc = None
    data = brook.data_dir
    assert (data / ".kafka_cleanshutdown").exists()
    assert (data / "recovery-point-offset-checkpoint").exists()
    assert (data / "replication-offset-checkpoint").exists()
    assert (data / "meta.properties").exists()
    assert any(p.name.startswith(unique_topic) for p in data.iterdir())
    brook.start()
    assert not (data / ".kafka_cleanshutdown").exists()
    with RawClient(brook.bootstrap) as c:
        assert _topic_id(c, unique_topic) == topic_id  # Fetch v13+ clients rely on it
        got = []
        for p in range(2):
            part = fetch(c, unique_topic, p, 0).responses[0].partitions[0]
            got += [r.value for _, r in iter_records(part.records)]
        assert sorted(got) == sorted(f"m{i}".encode() for i in range(20))


def test_kill_minus_9_then_restart_keeps_flushed_records(tmp_path: Path, unique_topic: str) -> None:
    with BrookProcess(tmp_path / "d", {"log.flush.interval.messages": "1"}) as b:
        with RawClient(b.bootstrap) as c:
            topic_id = create_topic(c, unique_topic).topics[0].topic_id
            for i in range(50):
                part = produce(c, unique_topic, 0, build_simple_batch([str(i).encode()]))
                assert part.responses[0].partition_responses[0].error_code == 0
        assert b.proc is not None
        os.kill(b.proc.pid, signal.SIGKILL)
        b.proc.wait()
        b.proc = None
        b.start()
        with RawClient(b.bootstrap) as c:
            assert _topic_id(c, unique_topic) == topic_id
            part = fetch(c, unique_topic, 0, 0).responses[0].partitions[0]
            assert [r.value for _, r in iter_records(part.records)] == [
                str(i).encode() for i in range(50)
            ]
            assert part.high_watermark == 50


def test_config_file_with_overrides(tmp_path: Path) -> None:
    """``brook server --config FILE --override k=v``: the file's keys apply, an override wins."""
    port = free_port()
    props = tmp_path / "server.properties"
    props.write_text(
        "# a deployment's file\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
        f"log.dirs={tmp_path / 'data'}\n"
        "node.id=3\n"
        "num.partitions=2\n"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "brook.cli.main",
            "server",
            "--config",
            str(props),
            "--override",
            "node.id=5",
        ],
        env=env_with_repo(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc=proc)
        with RawClient(f"127.0.0.1:{port}") as c:
            meta = c.request(
                3,
                12,
                {
                    "topics": [{"name": "auto", "topic_id": None}],
                    "allow_auto_topic_creation": True,
                    "include_topic_authorized_operations": False,
                },
            )
        assert [b.node_id for b in meta.brokers] == [5]
        assert len(meta.topics[0].partitions) == 2
        assert (tmp_path / "data" / "auto-1").is_dir()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()
