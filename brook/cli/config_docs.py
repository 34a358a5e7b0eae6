"""Every config table as Markdown:
``python -m brook.cli.config_docs > docs/configuration.md``.

The reference is generated from the same tables the code parses, so it cannot drift. It
lives with the tools because it reads the client's tables as well as the broker's.
"""

from __future__ import annotations

import sys

from brook.client.config import ADMIN_CONFIG, CONSUMER_CONFIG, PRODUCER_CONFIG
from brook.config.defs import NO_DEFAULT, ConfigDef
from brook.config.server import SERVER_CONFIG
from brook.config.topic import TOPIC_CONFIG


def _default(value: object) -> str:
    if value is NO_DEFAULT:
        return "(required)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or '""'
    if callable(value):
        return getattr(value, "__name__", str(value))
    return str(value)


def render_table(table: ConfigDef) -> str:
    lines = ["| name | type | default | description |", "|---|---|---|---|"]
    for key in table:
        doc = key.doc.replace("|", "\\|")
        if key.inert:
            doc = f"{doc} *(accepted for compatibility; no effect)*" if doc else "*(no effect)*"
        lines.append(f"| `{key.name}` | {key.type.value} | `{_default(key.default)}` | {doc} |")
    return "\n".join(lines)


def render() -> str:
    sections = [
        ("Broker (`server.properties`, `--override`)", SERVER_CONFIG),
        ("Topic (CreateTopics, IncrementalAlterConfigs, `brook configs`)", TOPIC_CONFIG),
        ("Producer (`brook.Producer`)", PRODUCER_CONFIG),
        ("Consumer (`brook.Consumer`)", CONSUMER_CONFIG),
        ("Admin (`brook.Admin`)", ADMIN_CONFIG),
    ]
    out = [
        "# Configuration reference",
        "",
        "Generated from the config tables by `python -m brook.cli.config_docs`; do not edit by "
        "hand.",
        "Names, meanings and defaults follow Apache Kafka; an unknown key is refused by name.",
    ]
    for title, table in sections:
        out += ["", f"## {title}", "", render_table(table)]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
