"""A whole-request refusal builds into every version of every controller-listener API, with
the error where Kafka puts it."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest
from frame_fuzz import Env, Generator

import brook.broker.handlers  # noqa: F401  (registers the handlers)
from brook.broker.authz import ALWAYS_SERVED
from brook.broker.refusals import refusal_response
from brook.broker.registry import CONTROLLER_HANDLERS
from brook.protocol.api import ApiKey, request_class, response_class
from brook.protocol.build import build
from brook.protocol.errors import Errors
from brook.protocol.framing import decode_kio, encode_kio

CODE = Errors.CLUSTER_AUTHORIZATION_FAILED
CASES = [
    (key, version)
    for key, spec in sorted(CONTROLLER_HANDLERS.items())
    for version in range(spec.min_version, spec.max_version + 1)
    if key not in ALWAYS_SERVED
]


def sample_request(key: int, version: int, seed: int) -> Any:
    """A valid request of that API and version with plausible values (the fuzzer's)."""
    env = Env(["t", "u"], [uuid.uuid4()], ["g"])
    body = Generator(env, random.Random(seed)).body(key, version)
    return decode_kio(request_class(key, version), body.data, 0)


@pytest.mark.parametrize(("key", "version"), CASES, ids=lambda v: str(v))
def test_every_api_and_version_builds(key: int, version: int) -> None:
    """Over a few generated requests (some name no item at all): the response builds, and
    every error code in it is the refusal; at least one request shows it."""
    seen: set[int] = set()
    for seed in range(10):
        request = sample_request(key, version, seed)
        answer = refusal_response(key, version, request, CODE, "no")
        response = build(response_class(key, version), answer)
        assert encode_kio(response)
        codes = _codes(response)
        assert set(codes) <= {CODE}, codes
        seen.update(codes)
    assert seen == {CODE}


def _codes(entity: object) -> list[int]:
    """Every error code of a response that is not a nested item's own success."""
    found: list[int] = []
    for name in getattr(entity, "__dataclass_fields__", {}):
        value = getattr(entity, name)
        if name == "error_code":
            found.append(int(value))
        elif isinstance(value, tuple):
            for item in value:
                found.extend(_codes(item))
    return found


def test_delete_topics_by_id_names_each_topic() -> None:
    topic_id = uuid.uuid4()
    request = build(
        request_class(ApiKey.DELETE_TOPICS, 6),
        {"topics": [{"name": None, "topic_id": topic_id}], "timeout": 1000},
    )
    answer = refusal_response(ApiKey.DELETE_TOPICS, 6, request, CODE, "no")
    assert answer["responses"] == [
        {"name": None, "topic_id": topic_id, "error_code": CODE, "error_message": "no"}
    ]
