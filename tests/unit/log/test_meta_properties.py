"""meta.properties: format, and the checks a node makes on its storage before it starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from brook.log.checkpoints import read_properties
from brook.log.meta_properties import (
    StorageCheckError,
    check_storage,
    format_storage,
    is_valid_cluster_id,
    new_uuid,
)


def test_format_writes_every_directory_once(tmp_path: Path) -> None:
    cid = new_uuid()
    assert is_valid_cluster_id(cid) and not is_valid_cluster_id("cluster-1")
    dirs = [tmp_path / "a", tmp_path / "b"]
    assert format_storage(dirs, cid, 3, ignore_formatted=False) == dirs
    props = [read_properties(d / "meta.properties") for d in dirs]
    assert {p["cluster.id"] for p in props} == {cid} and {p["node.id"] for p in props} == {"3"}
    assert props[0]["version"] == "1" and props[0]["directory.id"] != props[1]["directory.id"]
    with pytest.raises(StorageCheckError, match="already formatted"):
        format_storage(dirs, cid, 3, ignore_formatted=False)
    assert format_storage(dirs, cid, 3, ignore_formatted=True) == []
    with pytest.raises(StorageCheckError, match="valid UUID"):
        format_storage([tmp_path / "c"], "not-an-id", 3, ignore_formatted=False)


def test_checks_name_what_disagrees(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    with pytest.raises(StorageCheckError, match=r"not formatted.*brook storage format"):
        check_storage([a], 1, configured_cluster_id=None, may_self_format=False)
    cid = check_storage([a], 1, configured_cluster_id=None, may_self_format=True)
    assert read_properties(a / "meta.properties")["cluster.id"] == cid
    assert check_storage([a], 1, configured_cluster_id=cid, may_self_format=False) == cid
    with pytest.raises(StorageCheckError, match=rf"belongs to cluster {cid}.*cluster.id is other"):
        check_storage([a], 1, configured_cluster_id="other", may_self_format=False)
    with pytest.raises(StorageCheckError, match=r"Stored node id 1 .* node.id 2"):
        check_storage([a], 2, configured_cluster_id=None, may_self_format=False)
    # a new, empty log directory beside a formatted one is formatted alike
    assert check_storage([a, b], 1, configured_cluster_id=None, may_self_format=False) == cid
    assert read_properties(b / "meta.properties")["cluster.id"] == cid
    format_storage([tmp_path / "c"], new_uuid(), 1, ignore_formatted=False)
    with pytest.raises(StorageCheckError, match="different clusters"):
        check_storage([a, tmp_path / "c"], 1, configured_cluster_id=None, may_self_format=False)
