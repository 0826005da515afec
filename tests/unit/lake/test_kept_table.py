"""A Delta table kept between batches (``sluice.lake.kept_table``) against real Delta tables:
it answers as a fresh read does, and reads the log for an app transaction only when a commit it did
not make came in between."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from sluice.lake.kept_table import KeptTable

pytestmark = pytest.mark.unit


def _append(path, app_id, version):
    write_deltalake(str(path), pa.table({"id": [version]}), mode="append",
                    commit_properties=CommitProperties(app_transactions=[Transaction(app_id, version)]))


@pytest.fixture
def lookups(monkeypatch):
    """The calls that read the log for an app transaction."""
    calls = []
    original = DeltaTable.transaction_version

    def counted(self, app_id):
        calls.append(app_id)
        return original(self, app_id)

    monkeypatch.setattr(DeltaTable, "transaction_version", counted)
    return calls


def test_none_until_the_table_exists(tmp_path):
    kept = KeptTable(str(tmp_path / "t"), None)
    assert kept.current() is None and kept.transaction_version("app") is None
    _append(tmp_path / "t", "app", 0)
    assert kept.transaction_version("app") == 0 and kept.current().version() == 0


def test_its_own_commits_are_remembered_and_others_read(tmp_path, lookups):
    path = tmp_path / "t"
    _append(path, "app", 0)
    kept = KeptTable(str(path), None)
    assert kept.transaction_version("app") == 0 and len(lookups) == 1
    for batch in (1, 2, 3):  # ours, each the only commit since
        before = kept.current().version()
        _append(path, "app", batch)
        kept.committed(before, "app", batch)
        assert kept.transaction_version("app") == batch
    assert len(lookups) == 1
    assert kept.transaction_version("other") is None and len(lookups) == 2
    before = kept.current().version()
    _append(path, "app", 4)
    _append(path, "app", 5)  # another writer's, before ours was recorded: two versions up
    kept.committed(before, "app", 4)
    assert kept.transaction_version("app") == 5 == DeltaTable(str(path)).transaction_version("app")
    DeltaTable(str(path)).optimize.compact()  # a maintenance commit: read again, same answer
    calls = len(lookups)
    assert kept.transaction_version("app") == 5 and len(lookups) == calls + 1
    assert kept.current().version() == DeltaTable(str(path)).version()
