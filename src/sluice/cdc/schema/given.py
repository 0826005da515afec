"""The schema a user gives for archived binlog files, and the schema tracker that reads them.

Archived files from servers whose binlog does not name the columns (MySQL's default MINIMAL
metadata, MariaDB's NO_LOG, MySQL 5.7) need the tables' definitions from elsewhere, as their
``CREATE TABLE`` is often in a file purged long ago. ``load_schema`` reads them from a live
server (a DSN: ``information_schema``, read as the schema bootstrap reads it) or from a SQL file
(``mysqldump --no-data``: ``sqlfile``). Either describes the tables as they are now, later than
the files: ``archived_tracker`` makes a ``SchemaTracker`` that replays the files' DDL on it as on
a catalog read after them, checks it against every TABLE_MAP, and reads a table it does not fit,
or does not know, by position with a warning (``positional="fallback"``), or every table by
position (``positional=True``). This is the shell: it opens the connection or the file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.tracker import SchemaTracker
from sluice.errors import ConfigError

__all__ = ["GivenSchema", "archived_tracker", "load_schema"]


@dataclass(frozen=True, slots=True)
class GivenSchema:
    """A catalog given for archived files: where it came from (for messages; a DSN redacted), the
    server flavor it describes when known, and warnings about statements it could not replay."""

    catalog: Catalog
    label: str
    flavor: str | None
    warnings: tuple[str, ...] = ()


def load_schema(source: str, include: Callable[[str, str], bool] | None = None) -> GivenSchema:
    """The tables of a live server (``source`` a DSN, ``mysql://...`` or ``mariadb://...``) or of a
    SQL file (any other ``source``: its path). ``include(db, table)`` limits a server's read."""
    if "://" in source:
        from sluice.cdc.schema.bootstrap import bootstrap_catalog
        from sluice.dsn import parse_dsn
        from sluice.io.connection import Connection

        config = parse_dsn(source)
        with Connection.open(config) as conn:
            catalog = bootstrap_catalog(conn, include)
        return GivenSchema(catalog, f"the server {config.redacted()}", catalog.flavor)
    from sluice.cdc.schema.sqlfile import catalog_from_sql

    path = Path(source)
    try:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
    except OSError as exc:
        raise ConfigError(f"cannot read the schema file {source}: {exc.strerror or exc}") from None
    found = catalog_from_sql(text, path.name)
    warnings = tuple(f"{path.name}: statement {n} ({head}) not replayed: {why}" for n, head, why in found.unparsed)
    return GivenSchema(found.catalog, path.name, found.flavor, warnings)


def archived_tracker(given: GivenSchema | None, *, positional: bool = False, named: bool = False) -> SchemaTracker:
    """The schema tracker for archived files: ``given``'s tables (or none) as a catalog read after
    the files; tables it cannot name are read by position, all of them with ``positional``. ``named``:
    none is read by position (columns kept out or hashed by name): one that cannot be named stops."""
    if positional:
        return SchemaTracker(positional="all")
    mode = "never" if named else "fallback"
    if given is None:
        return SchemaTracker(positional=mode)
    return SchemaTracker(given.catalog, flavor=given.flavor, read_later=given.label, positional=mode)
