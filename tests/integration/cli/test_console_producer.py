"""``brook console-producer`` against a running broker: Kafka's line reader and settings."""

from __future__ import annotations

import io
import sys

import pytest
from cli_support import Tool
from support import BrookProcess

from brook import Consumer


def produce_lines(
    tool: Tool, monkeypatch: pytest.MonkeyPatch, bootstrap: str, text: str, *args: str
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    return tool("console-producer", *args, bootstrap=bootstrap)


def read_all(bootstrap: str, topic: str, count: int) -> list[tuple]:
    with Consumer({"bootstrap.servers": bootstrap}) as consumer:
        consumer.assign([(topic, 0)])
        consumer.seek_to_beginning()
        records = []
        for _ in range(50):
            records += consumer.poll(timeout_ms=200)
            if len(records) >= count:
                break
    return [(r.key, r.value, list(r.headers)) for r in records]


def test_keys_headers_and_null_marker(
    tool: Tool, monkeypatch: pytest.MonkeyPatch, brook_session: BrookProcess, unique_topic: str
) -> None:
    b = brook_session.bootstrap
    text = "h1:a,h2:b\tk1\tv1\nNULL\tk2\tNULL\nh3:NULL\tNULL\tv3\n"
    code, _, err = produce_lines(
        tool,
        monkeypatch,
        b,
        text,
        "--topic",
        unique_topic,
        "--sync",
        "--property",
        "parse.key=true",
        "--property",
        "parse.headers=true",
        "--property",
        "null.marker=NULL",
        "--compression-codec",
    )
    assert code == 0, err
    assert read_all(b, unique_topic, 3) == [
        (b"k1", b"v1", [("h1", b"a"), ("h2", b"b")]),
        (b"k2", None, []),
        (None, b"v3", [("h3", None)]),
    ]


def test_plain_lines_and_parse_errors(
    tool: Tool, monkeypatch: pytest.MonkeyPatch, brook_session: BrookProcess, unique_topic: str
) -> None:
    b = brook_session.bootstrap
    code, _, err = produce_lines(tool, monkeypatch, b, "one\ntwo\n", "--topic", unique_topic)
    assert code == 0, err
    assert read_all(b, unique_topic, 2) == [(None, b"one", []), (None, b"two", [])]
    code, _, err = produce_lines(
        tool,
        monkeypatch,
        b,
        "no-separator\n",
        "--topic",
        unique_topic,
        "--property",
        "parse.key=true",
    )
    assert code == 1
    assert "No key separator found on line number 1: 'no-separator'" in err
    # ignore.error keeps going: the whole line becomes the value.
    code, _, _ = produce_lines(
        tool,
        monkeypatch,
        b,
        "whole-line\n",
        "--topic",
        unique_topic,
        "--property",
        "parse.key=true",
        "--property",
        "ignore.error=true",
    )
    assert code == 0
    assert read_all(b, unique_topic, 3)[-1] == (None, b"whole-line", [])
