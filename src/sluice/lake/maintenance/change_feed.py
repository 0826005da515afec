"""Delta's Change Data Feed on the mirrors: the table property and its upkeep.

A mirror is created with ``delta.enableChangeDataFeed=true`` (``mirror_configuration``), so every
commit that changes rows can be read back as the batch's net changes, each row with
``_change_type`` (``insert``, ``update_preimage``, ``update_postimage``, ``delete``),
``_commit_version`` and ``_commit_timestamp``: delta-rs' ``load_cdf``, Spark's ``readChangeFeed``
and ``table_changes()``. delta-rs writes ``_change_data`` files for a MERGE; an append (the first
batch into an empty mirror, the snapshot's chunks) reads back as inserts and an overwrite (a DDL's
rewrite, a TRUNCATE) as the deletes of the old rows and the inserts of the new ones. A compaction
commits with ``dataChange=false`` and adds nothing to the feed. Column mapping is never used:
delta-rs 1.6 cannot read the feed of a table that has it.

``enable_change_feed`` sets the property on a mirror made before it was on (one commit of table
properties, no rows: what a reader sees is unchanged); the feed starts at that commit.
"""

from __future__ import annotations

from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from sluice.errors import ConfigError
from sluice.lake.data_files import CHANGE_FEED, has_change_feed

__all__ = ["CHANGE_FEED", "enable_change_feed", "has_change_feed", "mirror_configuration"]

def mirror_configuration(change_feed: bool) -> dict[str, str] | None:
    """The table properties a new mirror is created with (None: none)."""
    return {CHANGE_FEED: "true"} if change_feed else None


def enable_change_feed(uri: str, storage_options: dict[str, str] | None = None) -> bool:
    """Turn the Change Data Feed on for the mirror at ``uri`` if it is off; True when it changed."""
    dt = DeltaTable(uri, storage_options=storage_options)
    if has_change_feed(dt):
        return False
    try:
        dt.alter.set_table_properties({CHANGE_FEED: "true"})
    except DeltaError as exc:
        raise ConfigError(
            f"cannot turn on the change data feed of the mirror {uri} ({exc}); fix the cause or run with "
            "change_feed = false"
        ) from exc
    return True
