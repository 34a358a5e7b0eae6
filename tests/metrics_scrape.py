"""Scraping a node's Prometheus endpoint over HTTP and reading its samples, for the metrics
suites; and the TCP ports a process listens on (/proc), to tell an endpoint that is off."""

from __future__ import annotations

import os
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(where: int | str, timeout: float = 10.0) -> Samples:
    """Every sample of ``http://127.0.0.1:port/metrics`` (``where`` a port) or of the URL
    ``where``, by (name, labels)."""
    url = f"http://127.0.0.1:{where}/metrics" if isinstance(where, int) else where
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        assert resp.status == 200
        text = resp.read().decode()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name{labels}``; KeyError naming it when the scrape has none."""
    key = (name, frozenset(labels.items()))
    if key not in samples:
        raise KeyError(f"no sample {name}{labels} in the scrape")
    return samples[key]


def value_or_zero(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name{labels}``, 0 when there is none yet (a counter not yet counted)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def eventually(predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Poll ``predicate`` every 0.2 s until it holds (True) or ``timeout`` passes (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` has a listening socket on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # TCP_LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports
