"""Building any version of a kio message from one description."""

from __future__ import annotations

import datetime

from brook.protocol.api import request_class, response_class
from brook.protocol.build import build, from_ms, to_ms
from brook.protocol.framing import decode_kio, encode_kio


def test_fields_a_version_lacks_are_dropped_and_types_converted() -> None:
    data = {
        "throttle_time": 5,
        "brokers": [{"node_id": 1, "host": "h", "port": 9, "rack": "r"}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [],
        "error_code": 0,
    }
    for version in (0, 1, 9, 13):
        cls = response_class(3, version)
        msg = build(cls, data)
        decoded = decode_kio(cls, encode_kio(msg))
        assert decoded.brokers[0].host == "h"
        assert getattr(decoded, "rack", None) is None
        if version >= 3:
            assert decoded.throttle_time == datetime.timedelta(milliseconds=5)


def test_timestamps_and_timedeltas() -> None:
    cls = request_class(1, 12)
    msg = build(
        cls,
        {
            "replica_id": -1,
            "max_wait": 500,
            "min_bytes": 1,
            "max_bytes": 100,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    assert to_ms(msg.max_wait) == 500
    assert to_ms(from_ms(-1)) == -1
    assert to_ms(None, 7) == 7
