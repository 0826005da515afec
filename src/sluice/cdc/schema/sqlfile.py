"""A catalog from a file of SQL: ``mysqldump --no-data`` / ``mariadb-dump --no-data`` output, or any
``CREATE TABLE`` statements written by hand.

The text is cut into statements as the server's client does (``;`` outside strings, quoted names
and comments; ``DELIMITER`` lines change the delimiter, as a dump with triggers has them), and each
DDL statement is replayed with the same DDL replay as the binlog's (``ddl.apply_ddl``); ``USE db``
sets the database of the statements after it. A dump of one database names it only in its header
(``-- Host: ...    Database: shop``): that is the database of the statements before any ``USE``.
Statements that are not DDL (``SET``, ``LOCK TABLES``, ``INSERT`` ...) are skipped. A DDL statement
that cannot be replayed is reported, not fatal: its table stays unknown; a file that defines no
table at all is a ``SchemaError``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.ddl import apply_ddl, is_ddl, quoted_end
from sluice.errors import SchemaError

__all__ = ["SqlSchema", "catalog_from_sql", "statements"]

_HEADER_DB = re.compile(r"^-- Host: .*?\bDatabase: (\S+)\s*$", re.MULTILINE)
_DUMP_FLAVOR = re.compile(r"^-- (MariaDB|MySQL) dump ", re.MULTILINE)
_USE = re.compile(r"\s*USE\s+(`(?:[^`]|``)+`|[\w$]+)\s*$", re.IGNORECASE)
_DELIMITER = re.compile(r"DELIMITER[ \t]+(\S+)[ \t]*(?:\r?\n|$)", re.IGNORECASE)


@dataclass
class SqlSchema:
    """The catalog a SQL file describes, the flavor its header names (None: not a dump), and each
    DDL statement that could not be replayed: ``(statement number, first words, why)``."""

    catalog: Catalog
    flavor: str | None
    unparsed: list[tuple[int, str, str]] = field(default_factory=list)


def catalog_from_sql(text: str, name: str, flavor: str | None = None) -> SqlSchema:
    """Replay the DDL of ``text`` (the file ``name``, for messages) on an empty catalog.

    ``flavor`` ("mysql" / "mariadb") decides how types map; None takes it from a dump's header.
    Raises ``SchemaError`` when the file defines no table.
    """
    found = _DUMP_FLAVOR.search(text)
    dump_flavor = found.group(1).lower() if found else None
    flavor = flavor or dump_flavor
    header = _HEADER_DB.search(text)
    db = header.group(1) if header else None
    catalog = Catalog(flavor=flavor).with_server_defaults(flavor=flavor) if flavor else Catalog()
    out = SqlSchema(catalog, dump_flavor)
    for number, sql in enumerate(statements(text), 1):
        use = _USE.match(sql)
        if use:
            db = use.group(1).strip("`").replace("``", "`")
            continue
        if not is_ddl(sql):
            continue
        new, outcome = apply_ddl(out.catalog, sql, db)
        if not outcome.understood:
            why = outcome.message or "not understood"
            if db is None:
                why += " (the file names no database: dump with --databases, or add a USE statement)"
            out.unparsed.append((number, _head(sql), why))
        out.catalog = new
    if next(out.catalog.tables(), None) is None:
        problems = "; ".join(f"statement {n} ({head}): {why}" for n, head, why in out.unparsed[:3])
        raise SchemaError(f"{name} defines no table sluice can read" + (f": {problems}" if problems else
                          " (no CREATE TABLE in it)"))
    return out


def statements(text: str) -> Iterator[str]:
    """The statements of ``text``, without their delimiters and the comments before them (empty
    ones left out)."""
    delimiter = ";"
    i = start = 0
    n = len(text)
    while i < n:
        c = text[i]
        at_start = i == start
        if at_start:
            m = _DELIMITER.match(text, i)
            if m:
                delimiter = m.group(1)
                i = start = m.end()
                continue
        if text.startswith(delimiter, i):
            if text[start:i].strip():
                yield text[start:i].strip()
            i = start = i + len(delimiter)
        elif c in "'\"`":
            i = quoted_end(text, i)
        elif c == "#" or (c == "-" and text.startswith("--", i) and text[i + 2:i + 3].isspace()):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif c == "/" and text.startswith("/*", i) and not text.startswith("/*!", i) \
                and not text.startswith("/*M!", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            i += 1
            if not c.isspace():
                continue
        if at_start and i != start:
            start = i  # whitespace or a comment before a statement: not part of it
    if text[start:].strip():
        yield text[start:].strip()


def _head(sql: str) -> str:
    words = " ".join(sql.split())
    return words if len(words) <= 60 else words[:57] + "..."
