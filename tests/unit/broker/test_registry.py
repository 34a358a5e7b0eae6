"""The handler table: one handler per API, and docs/compatibility.md states its versions."""

from __future__ import annotations

import re
from pathlib import Path

import brook.broker.handlers  # noqa: F401  (registers the handlers)
from brook.broker.registry import HANDLERS
from brook.protocol.api import ApiKey, request_class, response_class

DOC = Path(__file__).resolve().parents[3] / "docs" / "compatibility.md"


def test_every_served_version_has_kio_classes() -> None:
    for key, spec in HANDLERS.items():
        for version in range(spec.min_version, spec.max_version + 1):
            assert request_class(key, version) is not None, (spec.api_key, version)
            assert response_class(key, version) is not None, (spec.api_key, version)


def test_compatibility_doc_matches_the_registry() -> None:
    row = r"^\| ([A-Z_]+) \((\d+)\) \| (\d+)\N{EN DASH}(\d+) \| (\d+) \|"
    rows = re.findall(row, DOC.read_text(), re.M)
    documented = {int(k): (name, int(lo), int(hi), int(adv)) for name, k, lo, hi, adv in rows}
    served = {
        k: (ApiKey(k).name, s.min_version, s.max_version, s.advertised_min)
        for k, s in HANDLERS.items()
    }
    assert documented == served
