"""``brook consumer-groups`` against a running broker and a real group: list, describe (lag per
partition, members, state), reset-offsets (refused while active; dry run, execute, export,
shift, from a file), delete-offsets and delete."""

from __future__ import annotations

import time
from pathlib import Path

from cli_support import Tool
from confluent_kafka import Producer
from support import BrookProcess

from brook import Admin, Consumer
from brook.client.admin import MemberDescription


def _load(tool: Tool, bootstrap: str, topic: str) -> None:
    assert (
        tool("topics", "--create", "--topic", topic, "--partitions", "2", bootstrap=bootstrap)[0]
        == 0
    )
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition, count in ((0, 5), (1, 3)):
        for _ in range(count):
            producer.produce(topic, b"v", partition=partition)
    assert producer.flush(10) == 0


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.strip()][1:]


def test_the_tool_on_a_live_then_empty_group(
    tool: Tool, brook_session: BrookProcess, unique_topic: str, tmp_path: Path
) -> None:
    b, t = brook_session.bootstrap, unique_topic
    group = f"{t}-group"
    _load(tool, b, t)
    member = Consumer(
        {
            "bootstrap.servers": b,
            "group.id": group,
            "client.id": "cli-app",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        member.subscribe([t])
        got = 0
        deadline = time.monotonic() + 30
        while got < 8 and time.monotonic() < deadline:
            got += len(member.poll(200))
        assert got == 8
        member.commit({(t, 0): 2, (t, 1): 3})
        (member_id,) = {m.member_id for m in _describe_members(b, group)}

        code, out, err = tool("consumer-groups", "--list", bootstrap=b)
        assert code == 0 and group in out.split()
        code, out, _ = tool("consumer-groups", "--list", "--state", "stable", bootstrap=b)
        assert [group, "Stable"] in _rows(out)
        assert out.splitlines()[0].split() == ["GROUP", "STATE"]

        code, out, err = tool("consumer-groups", "--describe", "--group", group, bootstrap=b)
        assert (code, err) == (0, "")
        assert out.splitlines()[1].split() == [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ]
        assert _rows(out) == [
            [group, t, "0", "2", "5", "3", member_id, "/127.0.0.1", "cli-app"],
            [group, t, "1", "3", "3", "0", member_id, "/127.0.0.1", "cli-app"],
        ]
        code, out, _ = tool(
            "consumer-groups", "--describe", "--group", group, "--members", bootstrap=b
        )
        assert _rows(out) == [[group, member_id, "/127.0.0.1", "cli-app", "2"]]
        code, out, _ = tool(
            "consumer-groups", "--describe", "--group", group, "--state", bootstrap=b
        )
        assert _rows(out)[0][-3:] == ["range", "Stable", "1"]

        code, out, err = tool(
            "consumer-groups",
            "--reset-offsets",
            "--group",
            group,
            "--topic",
            t,
            "--to-earliest",
            "--execute",
            bootstrap=b,
        )
        assert (
            f"Error: Assignments can only be reset if the group '{group}' is inactive, but the "
            "current state is Stable." in out
        )
    finally:
        member.close()

    code, out, err = tool("consumer-groups", "--describe", "--group", group, bootstrap=b)
    assert f"Consumer group '{group}' has no active members." in err
    assert _rows(out) == [
        [group, t, "0", "2", "5", "3", "-", "-", "-"],
        [group, t, "1", "3", "3", "0", "-", "-", "-"],
    ]

    # Dry run (the default, with Kafka's warning): a plan, nothing changes.
    code, out, err = tool(
        "consumer-groups",
        "--reset-offsets",
        "--group",
        group,
        "--all-topics",
        "--to-earliest",
        bootstrap=b,
    )
    assert code == 0 and "--execute option is missing" in err
    assert _rows(out) == [[group, t, "0", "0"], [group, t, "1", "0"]]
    assert _committed(b, group) == {0: 2, 1: 3}

    code, out, _ = tool(
        "consumer-groups",
        "--reset-offsets",
        "--group",
        group,
        "--topic",
        f"{t}:0",
        "--shift-by",
        "-1",
        "--execute",
        bootstrap=b,
    )
    assert _rows(out) == [[group, t, "0", "1"]]
    assert _committed(b, group) == {0: 1, 1: 3}

    code, out, err = tool(
        "consumer-groups",
        "--reset-offsets",
        "--group",
        group,
        "--topic",
        t,
        "--to-offset",
        "99",
        "--dry-run",
        "--export",
        bootstrap=b,
    )
    assert out == f"{t},0,5\n{t},1,3\n\n"
    assert "Value will be set to 5" in err
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{t},0,4\n{t},1,1\n")
    tool(
        "consumer-groups",
        "--reset-offsets",
        "--group",
        group,
        "--from-file",
        str(plan),
        "--execute",
        bootstrap=b,
    )
    assert _committed(b, group) == {0: 4, 1: 1}

    code, out, _ = tool(
        "consumer-groups", "--delete-offsets", "--group", group, "--topic", f"{t}:1", bootstrap=b
    )
    assert out.startswith(f"Request succeeded for deleting offsets from group {group}.")
    assert _rows(out.split("\n", 1)[1]) == [[t, "1", "Successful"]]
    assert _committed(b, group) == {0: 4}

    code, out, _ = tool(
        "consumer-groups", "--delete", "--group", group, "--group", f"{group}-none", bootstrap=b
    )
    assert code == 1
    assert f"* Group '{group}-none' could not be deleted due to: " in out
    assert f"These consumer groups were deleted successfully: '{group}'" in out
    code, out, _ = tool("consumer-groups", "--describe", "--group", group, bootstrap=b)
    assert out == f"\nError: Consumer group '{group}' does not exist.\n"


def test_usage_errors(tool: Tool, brook_session: BrookProcess) -> None:
    code, _, err = tool("consumer-groups", "--describe", bootstrap=brook_session.bootstrap)
    assert code == 1
    assert "Option [describe] takes one of these options: [group], [all-groups]" in err
    code, _, err = tool("consumer-groups", "--list")
    assert (code, 'Missing required argument "[bootstrap-server]"' in err) == (1, True)
    code, out, _ = tool(
        "consumer-groups",
        "--reset-offsets",
        "--group",
        "g",
        "--topic",
        "nope",
        "--to-earliest",
        bootstrap=brook_session.bootstrap,
    )
    assert code == 1 and "Error: Executing consumer group command failed due to" in out


def _describe_members(bootstrap: str, group: str) -> list[MemberDescription]:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        return list(admin.describe_consumer_groups([group])[group].members)


def _committed(bootstrap: str, group: str) -> dict[int, int]:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        offsets = admin.list_consumer_group_offsets(group)
    return {tp.partition: v.offset for tp, v in offsets.items() if v is not None}
