"""The pieces the tools share: Kafka's include-list filter, topic-id text, key=value pairs,
argument parsing."""

from __future__ import annotations

import uuid

import pytest

from brook.cli.common import (
    CommandError,
    client_properties,
    include_list,
    kafka_uuid,
    parse_args,
    parse_key_values,
)
from brook.cli.topics import build_parser as build_topics_parser


def test_include_list_matches_whole_names() -> None:
    allowed = include_list("orders.*, payments")
    assert allowed("orders-eu") and allowed("payments")
    assert not allowed("old-orders") and not allowed("payments2")
    assert include_list(None)("anything")
    assert include_list("'quoted'")("quoted")


def test_include_list_rejects_a_bad_regex() -> None:
    with pytest.raises(CommandError, match="invalid regex"):
        include_list("(")


def test_kafka_uuid_is_unpadded_urlsafe_base64() -> None:
    value = uuid.UUID("7c51c166-f972-4c5c-bea9-0eb1b138de7b")
    assert kafka_uuid(value) == "fFHBZvlyTFy-qQ6xsTjeew"
    assert kafka_uuid(None) == "AAAAAAAAAAAAAAAAAAAAAA"


def test_key_values_and_precedence(tmp_path) -> None:
    assert parse_key_values(["a=1", " b = x=y "]) == {"a": "1", "b": "x=y"}
    with pytest.raises(CommandError, match="'nope'"):
        parse_key_values(["nope"])
    config = tmp_path / "client.properties"
    config.write_text("bootstrap.servers=file:1\nacks=1\nlinger.ms=7\n")
    props = client_properties(
        "cli:2", str(config), extra=["acks=all"], overrides={"client.id": "tool"}
    )
    assert props == {
        "bootstrap.servers": "cli:2",
        "acks": "all",
        "linger.ms": "7",
        "client.id": "tool",
    }
    with pytest.raises(CommandError, match="No such file"):
        client_properties("cli:2", str(tmp_path / "missing.properties"))
    with pytest.raises(CommandError, match="--bootstrap-server must be specified"):
        client_properties(None, None)


def test_option_values_may_start_with_a_dash() -> None:
    # Kafka topic ids are URL-safe base64: about one in 32 starts with "-".
    parser = build_topics_parser()
    args = parse_args(parser, ["--describe", "--topic-id", "-Wd8Fkq3RmGjFJ1tT0bJ0A"])
    assert args.topic_id == "-Wd8Fkq3RmGjFJ1tT0bJ0A" and args.describe
    args = parse_args(parser, ["--alter", "--topic", "t", "--config", "-x=1"])
    assert args.config == ["-x=1"]
    with pytest.raises(SystemExit):  # an option is not taken as the missing value
        parse_args(parser, ["--describe", "--topic-id", "--list"])
