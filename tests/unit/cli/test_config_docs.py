"""docs/configuration.md is exactly what the config tables generate."""

from __future__ import annotations

from pathlib import Path

from brook.cli.config_docs import render


def test_configuration_reference_is_current() -> None:
    doc = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
    assert doc.read_text() == render(), (
        "run: python -m brook.cli.config_docs > docs/configuration.md"
    )
