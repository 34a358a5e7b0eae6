"""Config tables: parsing, validation, unknown keys, .properties files."""

from __future__ import annotations

import pytest

from brook.config.defs import (
    ConfigDef,
    ConfigError,
    ConfigKey,
    Type,
    at_least,
    load_properties,
    one_of,
)

TABLE = ConfigDef(
    "demo",
    [
        ConfigKey("a.int", Type.INT, 5, at_least(1)),
        ConfigKey("b.bool", Type.BOOLEAN, False),
        ConfigKey("c.list", Type.LIST, ["x"], one_of("x", "y")),
        ConfigKey("d.required", Type.STRING),
    ],
)


def test_defaults_and_parsing() -> None:
    cfg = TABLE.parse({"d.required": "v", "a.int": "7", "b.bool": "TRUE", "c.list": "x, y"})
    assert (cfg["a.int"], cfg["b.bool"], cfg["c.list"], cfg["d.required"]) == (
        7,
        True,
        ["x", "y"],
        "v",
    )
    assert cfg.explicit == {"d.required", "a.int", "b.bool", "c.list"}
    assert TABLE.parse({"d.required": "v"})["a.int"] == 5


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"d.required": "v", "zzz": "1"}, "Unknown demo configuration 'zzz'"),
        ({}, "Missing required demo configuration 'd.required'"),
        ({"d.required": "v", "a.int": "x"}, "a.int: expected a value of type int"),
        ({"d.required": "v", "a.int": "0"}, "a.int: must be >= 1"),
        ({"d.required": "v", "b.bool": "yes"}, "b.bool: expected a value of type boolean"),
        ({"d.required": "v", "c.list": "z"}, "String must be one of: x, y"),
        ({"d.required": "v", "a.int": str(2**31)}, "a.int"),
    ],
)
def test_errors_name_the_key(props: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        TABLE.parse(props)


def test_duplicate_declaration_is_refused() -> None:
    with pytest.raises(ValueError):
        ConfigDef("x", [ConfigKey("a", Type.INT, 1), ConfigKey("a", Type.INT, 2)])


def test_properties_file_syntax() -> None:
    text = "# comment\n! also\nkey1=value1\nkey2 : value2\nkey3 value3\nlong=a,\\\n   b\n\n"
    assert load_properties(text) == {
        "key1": "value1",
        "key2": "value2",
        "key3": "value3",
        "long": "a,b",
    }
