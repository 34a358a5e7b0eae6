"""SCRAM credentials on a real broker: AlterUserScramCredentials and
DescribeUserScramCredentials over the wire (Kafka's per-user errors), a SCRAM login with them
on a SASL listener, the credentials kept across a restart (they are metadata records), and a
deleted credential refused; the clear-text password is never in the metadata log or the log."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from rawclient import RawClient
from support import BrookProcess, free_port

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.scram import SCRAM_SHA_256, SCRAM_SHA_512, ScramClient, salted_password


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[tuple[BrookProcess, str]]:
    plain, sasl = free_port(), free_port()
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
    }
    with BrookProcess(tmp_path / "data", overrides, port=plain) as b:
        yield b, f"127.0.0.1:{sasl}"


def upsertion(name: str, mech: int, password: str, iterations: int = 8192) -> dict:
    m = SCRAM_SHA_256 if mech == 1 else SCRAM_SHA_512
    salt = os.urandom(16)
    return {
        "name": name,
        "mechanism": mech,
        "iterations": iterations,
        "salt": salt,
        "salted_password": salted_password(m, password, salt, iterations),
    }


def alter(bootstrap: str, deletions: list[dict], upsertions: list[dict]) -> dict[str, tuple]:
    with RawClient(bootstrap) as c:
        response = c.request(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            0,
            {"deletions": deletions, "upsertions": upsertions},
        )
    return {r.user: (r.error_code, r.error_message) for r in response.results}


def scram_login(bootstrap: str, user: str, password: str, mech: str = "SCRAM-SHA-256") -> int:
    m = SCRAM_SHA_256 if mech == "SCRAM-SHA-256" else SCRAM_SHA_512
    client = ScramClient(m, user, password)
    with RawClient(bootstrap) as c:
        assert c.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mech}).error_code == 0
        first = c.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": client.first()})
        if first.error_code:
            return int(first.error_code)
        final = c.request(
            ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": client.final(bytes(first.auth_bytes))}
        )
        if final.error_code:
            return int(final.error_code)
        client.verify(bytes(final.auth_bytes))
        return Errors.NONE


def test_credentials_lifecycle(broker: tuple[BrookProcess, str]) -> None:
    b, sasl = broker
    results = alter(
        b.bootstrap,
        [{"name": "ghost", "mechanism": 1}],
        [
            upsertion("alice", 1, "alice-pw"),
            upsertion("alice", 2, "alice-pw-512"),
            upsertion("weak", 1, "x", iterations=1000),
        ],
    )
    assert results == {
        "ghost": (
            Errors.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        "alice": (Errors.NONE, None),
        "weak": (Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
    }
    with RawClient(b.bootstrap) as c:
        described = c.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
    assert [
        (r.user, sorted((i.mechanism, i.iterations) for i in r.credential_infos))
        for r in described.results
    ] == [("alice", [(1, 8192), (2, 8192)])]

    assert scram_login(sasl, "alice", "alice-pw") == Errors.NONE
    assert scram_login(sasl, "alice", "alice-pw-512", "SCRAM-SHA-512") == Errors.NONE
    assert scram_login(sasl, "alice", "wrong") == Errors.SASL_AUTHENTICATION_FAILED
    assert scram_login(sasl, "nobody", "x") == Errors.SASL_AUTHENTICATION_FAILED

    b.restart()
    assert scram_login(sasl, "alice", "alice-pw") == Errors.NONE
    assert alter(b.bootstrap, [{"name": "alice", "mechanism": 1}], []) == {
        "alice": (Errors.NONE, None)
    }
    assert scram_login(sasl, "alice", "alice-pw") == Errors.SASL_AUTHENTICATION_FAILED
    assert scram_login(sasl, "alice", "alice-pw-512", "SCRAM-SHA-512") == Errors.NONE
    b.stop()
    for path in b.data_dir.rglob("*"):
        if path.is_file():
            assert b"alice-pw" not in path.read_bytes(), path
    assert "alice-pw" not in b.log_path.read_text()


def test_storage_format_add_scram_bootstraps_users(tmp_path: Path) -> None:
    """kafka-storage's --add-scram through brook storage format: the new cluster starts with
    the user, whose password is in neither the bootstrap file nor the metadata log."""
    import subprocess

    from support import brook_exe, env_with_repo

    plain, sasl = free_port(), free_port()
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "log.dirs": str(tmp_path / "data"),
    }
    props = tmp_path / "server.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in overrides.items()))
    fmt = [brook_exe(), "storage", "format", "-t", "MkU3OEVBNTcwNTJENDM2Qg", "-c", str(props)]
    bad = subprocess.run(
        [*fmt, "--add-scram", "SCRAM-SHA-1=[name=x,password=y]"],
        capture_output=True,
        text=True,
        env=env_with_repo(),
        timeout=60,
    )
    assert bad.returncode == 2 and "SCRAM-SHA-256= or SCRAM-SHA-512=" in bad.stderr
    done = subprocess.run(
        [*fmt, "--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-boot,iterations=8192]"],
        capture_output=True,
        text=True,
        env=env_with_repo(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    with BrookProcess(tmp_path / "data", overrides, port=plain) as b:
        assert scram_login(f"127.0.0.1:{sasl}", "admin", "admin-boot", "SCRAM-SHA-512") == 0
        with RawClient(b.bootstrap) as c:
            described = c.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
        assert [
            (r.user, [(i.mechanism, i.iterations) for i in r.credential_infos])
            for r in described.results
        ] == [("admin", [(2, 8192)])]
        b.restart()
        assert scram_login(f"127.0.0.1:{sasl}", "admin", "admin-boot", "SCRAM-SHA-512") == 0
        b.stop()
    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            assert b"admin-boot" not in path.read_bytes(), path
