"""A mirror's Delta commit written by sluice itself: the one commit of a MERGE done in passes.

delta-rs commits ``add`` and ``remove`` actions for files written outside it
(``create_write_transaction``) but no ``cdc`` action, and a mirror keeps Delta's change data feed
(``sluice.lake.maintenance.change_feed``): a commit that removes a file and adds its rewrite with no
``cdc`` action reads, in the change feed, as every row of the old file deleted and every row of the
new one inserted. So a MERGE in passes (``sluice.lake.mirror.passes``) commits by writing the next
version of the table's log itself, as the Delta protocol lays it out: the batch's app transaction
(``txn``), ``commitInfo``, and the ``remove``, ``add`` and ``cdc`` actions of the files it wrote. The
log file is created only if no object has its name (a conditional write on an object store, as the
lake's lease takes), so the commit lands on the version after the one read, or fails with
``LakeBusyError`` and nothing of it is in the table. Only tables whose protocol asks nothing more of a
writer are committed so (``writable``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import quote

from deltalake import DeltaTable

from sluice import __version__
from sluice.errors import LakeBusyError
from sluice.lake.storage import LakeStore

__all__ = ["commit_rewrite", "unwritable"]

#: writer features a commit of add, remove and cdc actions honours by what it writes
_FEATURES: Final = frozenset({"changeDataFeed", "timestampNtz"})


def unwritable(dt: DeltaTable) -> str | None:
    """Why sluice cannot commit to ``dt`` itself (a feature of the table a writer must honour, or
    partitions), None when it can."""
    protocol = dt.protocol()
    metadata = dt.metadata()
    if metadata.partition_columns:
        return "it is partitioned"
    conf = metadata.configuration
    if conf.get("delta.appendOnly") == "true":
        return "it is append-only"
    if any(name.startswith("delta.constraints.") for name in conf):
        return "it has CHECK constraints"
    if conf.get("delta.columnMapping.mode", "none") != "none" or conf.get("delta.enableDeletionVectors") == "true":
        return "it maps column names or keeps deletion vectors"
    if protocol.min_reader_version > 3 or protocol.min_writer_version > 7 or protocol.min_writer_version in (5, 6):
        return f"its protocol is reader {protocol.min_reader_version} / writer {protocol.min_writer_version}"
    extra = set(protocol.writer_features or ()) - _FEATURES
    if extra:
        return f"it needs the writer features {', '.join(sorted(extra))}"
    schema = json.loads(dt.schema().to_json())
    if any(("delta.invariants" in f.get("metadata", {}) or "delta.generationExpression" in f.get("metadata", {}))
           for f in schema.get("fields", [])):
        return "a column has an invariant or a generation expression"
    return None


def commit_rewrite(store: LakeStore, path: str, version: int, *, removed: Sequence[dict[str, Any]],
                   added: Sequence[dict[str, Any]], changes: Sequence[dict[str, Any]], app_id: str,
                   batch_id: int | None, metrics: dict[str, int]) -> None:
    """Write version ``version`` of the table at ``path``: ``removed`` (its add actions' ``path`` and
    ``size``), ``added`` and ``changes`` (``sluice.lake.data_files.write_data_file``'s fields, the
    change data files' paths relative to the table) and, with ``batch_id``, ``app_id``'s transaction."""
    now = int(time.time() * 1000)
    lines: list[dict[str, Any]] = [{"commitInfo": {
        "timestamp": now, "operation": "MERGE", "operationParameters": {"predicate": "key in the batch's changes"},
        "operationMetrics": {k: str(v) for k, v in metrics.items()}, "isBlindAppend": False,
        "clientVersion": f"sluice-{__version__}",
    }}]
    if batch_id is not None:
        lines.append({"txn": {"appId": app_id, "version": batch_id, "lastUpdated": now}})
    for f in removed:
        lines.append({"remove": {"path": quote(f["path"]), "deletionTimestamp": now, "dataChange": True,
                                 "extendedFileMetadata": True, "partitionValues": {}, "size": f["size"]}})
    for f in added:
        lines.append({"add": {"path": quote(f["path"]), "partitionValues": {}, "size": f["size"],
                              "modificationTime": f["mtime"], "dataChange": True, "stats": f["stats"]}})
    for f in changes:
        lines.append({"cdc": {"path": quote(f["path"]), "partitionValues": {}, "size": f["size"],
                              "dataChange": False}})
    data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()
    created = store.create(f"{store.key(path)}/_delta_log/{version:020d}.json", data)
    if not created:
        raise LakeBusyError(
            f"version {version} of the Delta table {path} was committed by another writer while sluice wrote "
            "this batch into it; nothing of the batch was committed: one writer at a time, stop the other "
            "sluice writing this lake"
        )

