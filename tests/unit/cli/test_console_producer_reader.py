"""The console producer's line reader checks and its producer settings."""

from __future__ import annotations

import pytest

from brook.cli.common import CommandError
from brook.cli.console_producer import LineReader, build_parser, producer_config


def test_parse_headers_key_and_value() -> None:
    reader = LineReader({"parse.key": "true", "parse.headers": "true", "null.marker": "-"})
    assert reader.parse("a:1,b:-\tk\tv\tw") == (b"k", b"v\tw", [("a", b"1"), ("b", None)])
    assert reader.parse("-\t-\t-") == (None, None, [])
    with pytest.raises(CommandError, match="line number 3"):
        reader.parse("no-delimiters")


def test_reader_and_settings_checks() -> None:
    with pytest.raises(CommandError, match=r"key\.separator"):
        LineReader({"null.marker": "\t"})
    with pytest.raises(CommandError, match=r"headers\.delimiter and headers\.separator"):
        LineReader({"headers.separator": "\t"})
    args = build_parser().parse_args(
        [
            "--bootstrap-server",
            "h:1",
            "--topic",
            "t",
            "--timeout",
            "7",
            "--producer-property",
            "linger.ms=50",
            "--producer-property",
            "batch.size=100",
        ]
    )
    props = producer_config(args)
    # An explicit flag wins; a property set by the user beats the tool's default.
    assert props["linger.ms"] == 7 and props["batch.size"] == "100"
    assert props["acks"] == "-1" and props["request.timeout.ms"] == 1500
    assert props["client.id"] == "console-producer"
