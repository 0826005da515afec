"""The lake's URI and storage options (``sluice.lake.storage``): what is a path, what is an
object store, what is refused, and that no secret reaches a message."""

from __future__ import annotations

import os

import pytest

from sluice.errors import ConfigError
from sluice.lake.sink import DeltaLake
from sluice.lake.storage import LakeStore, _split_options, lake_store, redact

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("given", "uri", "remote"), [
    ("s3://bucket/lake/", "s3://bucket/lake", True),
    ("s3a://bucket/lake", "s3a://bucket/lake", True),
    ("abfss://c@acct.dfs.core.windows.net/lake", "abfss://c@acct.dfs.core.windows.net/lake", True),
    ("gs://bucket", "gs://bucket", True),
    ("file:///data/lake/", "/data/lake", False),
    ("/data/lake/", "/data/lake", False),
    ("/data/odd://name", "/data/odd:/name", False),  # a path: its scheme-like part is no scheme
    ("/", "/", False),
])
def test_a_lake_is_a_path_or_an_object_store_uri(given, uri, remote):
    store = lake_store(given)
    assert store.uri == uri
    assert store.remote is remote
    assert (store.delta_options() is not None) is remote


def test_a_relative_path_is_made_absolute():
    assert lake_store("./lake/").uri == os.path.join(os.getcwd(), "lake")


@pytest.mark.parametrize("uri", ["hdfs://nn/lake", "ftp://host/lake", "s3:///lake"])
def test_a_store_sluice_does_not_write_is_refused_by_name(uri):
    with pytest.raises(ConfigError, match="s3://"):
        lake_store(uri)


def test_the_layout_lives_under_the_root():
    lake = DeltaLake("s3://bucket/lake", "app")
    assert lake.changelog_path == "s3://bucket/lake/_sluice/changes"
    assert lake.table_path("shop", "orders") == "s3://bucket/lake/shop/orders"
    assert lake.store.key(lake.table_path("shop", "orders")) == "shop/orders"


def test_client_options_are_told_from_the_store_configuration():
    config, client = _split_options({"AWS_ALLOW_HTTP": "true", "AWS_ENDPOINT_URL": "http://h:1", "timeout": "5s"})
    assert config == {"AWS_ENDPOINT_URL": "http://h:1"}
    assert client == {"allow_http": "true", "timeout": "5s"}


def test_secrets_never_show():
    options = {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI", "AZURE_STORAGE_SAS_TOKEN": "sv=2024&sig=abc",
               "AWS_REGION": "eu"}
    store = LakeStore("s3://bucket/lake", options)
    assert "wJalr" not in repr(store) and "wJalr" not in str(store)
    text = redact("denied for wJalrXUtnFEMI with sv=2024&sig=abc in eu", options)
    assert text == "denied for <redacted> with <redacted> in eu"
    err = store.error("reading x", RuntimeError("403 Forbidden: signature wJalrXUtnFEMI"))
    assert "wJalr" not in str(err) and "credentials" in str(err)


def test_storage_options_are_text():
    assert lake_store("s3://b/l", {"AWS_ALLOW_HTTP": True, "timeout": 30}).options == {
        "AWS_ALLOW_HTTP": "true", "timeout": "30"}
    with pytest.raises(ConfigError, match=r"\[lake.storage\] x"):
        lake_store("s3://b/l", {"x": [1]})


def test_local_objects_keep_object_store_semantics(tmp_path):
    store = lake_store(tmp_path / "lake")
    assert store.get("_sluice/a.json") is None
    assert store.create("_sluice/a.json", b"1")
    assert not store.create("_sluice/a.json", b"2")
    assert store.get("_sluice/a.json") == b"1"
    store.check_conditional_writes("_probe")
    store.put_json("_sluice/b.json", {"x": 1})
    assert store.get_json("_sluice/b.json") == {"x": 1}
    assert store.copy_prefix("_sluice", "_copy/one") == 2
    assert sorted(store.keys("_copy")) == ["_copy/one/a.json", "_copy/one/b.json"]
    store.delete_prefix("_copy")
    assert list(store.keys("_copy")) == []
    assert not (tmp_path / "lake" / "_copy").exists()
    (tmp_path / "lake" / "_sluice" / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="damaged"):
        store.get_json("_sluice/bad.json")
