"""Columns kept out or hashed (``--exclude-columns`` / ``--hash-columns``): the one rule every output
of a row change follows, applied to the change record before anything is written of it.

A column whose ``db.table.column`` matches the exclude regex (in full) is left out of the images; one
that matches the hash regex has each value replaced by its HMAC-SHA-256 under the key, in lower-case
hex (64 characters); NULL stays NULL. The hashed text is the value as sluice's JSON lines print it,
a string's content without its quotes (``alice@example.com``, ``7``, ``10.50``, ``2024-03-01``, a
binary string's base64): equal values hash alike in every table, so joins on a hashed column still
work. The match is made on the column's name where the row is decoded, so a column added later by
DDL follows the same rule. A table with such a column takes the capture's record path
(``RowChangeBuilder``), whose records are masked here (``ColumnRules.mask``); every output is made
of them (JSON lines, Debezium events, change-log rows, the mirrors' MERGE sources).

A primary-key column may be hashed (its mirror is then keyed on the hash) but not excluded: rows
without their key cannot be told apart. A partial JSON update of a hashed column cannot be hashed
(the document is not in the binlog): it is a ``SchemaError``. The key is never part of a repr.

A lake records the rules its mirrors were written with (``rules_record``: the two regexes and a
check of the key, 16 hex digits of its HMAC of a fixed text, from which the key cannot be found), and
``rules_difference`` says how other rules differ from that record.

A snapshot cuts a table whose key is hashed into chunks on the key's own values, whose bounds the
lake keeps (``snapshot.json``): ``seal_chunk`` seals them, AES-GCM under a key derived from the hash
key (its HMAC of another fixed text), each bound bound to its chunk's name and side, and
``open_chunk`` opens them; another key is a ``ConfigError``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass, field, replace
from typing import Any

from sluice.cdc.jsonl import json_text
from sluice.cdc.records import RowChange
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.errors import ConfigError, SchemaError

__all__ = ["ColumnRules", "column_rules", "hash_value", "open_chunk", "rules_difference", "rules_record", "sealed"]

_KEY_CHECK = b"sluice: the check of a column hash key"
_SEAL = b"sluice: the seal of snapshot chunk bounds"
_SIDES = ("lower", "upper")


def hash_value(key: bytes, value: Any) -> str | None:
    """HMAC-SHA-256 of ``value`` under ``key`` in hex (module docstring); None stays None."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json_text(value)
    if text is None:
        return None
    if text.startswith('"') and not isinstance(value, str):  # a value printed as a JSON string: its content
        import json

        text = json.loads(text)
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class ColumnRules:
    """The exclude and hash regexes (full match on ``db.table.column``) and the hash key."""

    exclude: re.Pattern[str] | None = None
    hashed: re.Pattern[str] | None = None
    key: bytes = field(default=b"", repr=False, compare=False)
    _rules: dict[tuple[str, str, str], str | None] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.hashed is not None and not self.key:
            raise ConfigError(
                "--hash-columns needs a key: set hash_key, or hash_key_env naming an environment variable "
                "that holds it, in the config file's [columns] table"
            )

    def rule(self, db: str, table: str, column: str) -> str | None:
        """``"exclude"``, ``"hash"`` or None for one column (exclusion wins over hashing)."""
        key = (db, table, column)
        if key in self._rules:
            return self._rules[key]
        name = f"{db}.{table}.{column}"
        found = None
        if self.exclude is not None and self.exclude.fullmatch(name):
            found = "exclude"
        elif self.hashed is not None and self.hashed.fullmatch(name):
            found = "hash"
        self._rules[key] = found
        return found

    def touches(self, db: str, table: str, names: tuple[str, ...]) -> bool:
        """Whether any of the table's columns ``names`` is excluded or hashed."""
        return any(self.rule(db, table, n) is not None for n in names)

    def of(self, db: str, table: str, names: tuple[str, ...], which: str) -> frozenset[str]:
        """The table's columns among ``names`` whose rule is ``which`` (``"exclude"`` or ``"hash"``)."""
        return frozenset(n for n in names if self.rule(db, table, n) == which)

    def mask(self, change: RowChange) -> RowChange:
        """``change`` with its excluded columns left out and its hashed columns' values hashed."""
        db, table = change.db, change.table
        names = tuple({**(change.before or {}), **(change.after or {}), **(change.json_diffs or {})})
        drop, hashed = self.of(db, table, names, "exclude"), self.of(db, table, names, "hash")
        bad = self.of(db, table, change.pk, "exclude")
        where = f"{db}.{table}"
        if bad:
            raise ConfigError(
                f"--exclude-columns leaves out the primary key column {', '.join(sorted(bad))} of {where}: its "
                "rows could not be told apart. Hash the column instead (--hash-columns), or exclude the table"
            )
        if not drop and not hashed:
            return change
        diffs = change.json_diffs
        if diffs and hashed & set(diffs):
            raise SchemaError(
                f"{where}.{sorted(hashed & set(diffs))[0]} is hashed, but at {change.file}:{change.pos} the server "
                "logged a partial JSON update of it (binlog_row_value_options=PARTIAL_JSON), whose document is "
                "not in the binlog: turn PARTIAL_JSON off on the server, or exclude the column instead"
            )
        if diffs and drop & set(diffs):
            diffs = {k: v for k, v in diffs.items() if k not in drop} or None
        return replace(change, before=self._image(change.before, drop, hashed),
                       after=self._image(change.after, drop, hashed), json_diffs=diffs)

    def mask_schema(self, schema: TableSchema) -> TableSchema:
        """The table as the lake keeps it: excluded columns left out, hashed ones text of 64 ASCII
        characters (a mirror's column types follow from it); an excluded key column is refused."""
        columns = []
        for c in schema.columns:
            rule = self.rule(schema.db, schema.name, c.name)
            if rule == "exclude":
                if c.name in schema.primary_key:
                    raise ConfigError(
                        f"--exclude-columns leaves out the primary key column {c.name} of {schema.db}.{schema.name}: "
                        "its rows could not be told apart. Hash the column instead (--hash-columns), or exclude "
                        "the table")
                continue
            columns.append(ColumnDef(c.name, "varchar", nullable=c.nullable, length=64, charset="ascii",
                                     collation="ascii_general_ci", visible=c.visible) if rule == "hash" else c)
        return replace(schema, columns=tuple(columns))

    def seal_chunk(self, chunk: dict[str, Any]) -> dict[str, Any]:
        """A chunk's JSON (``Chunk.to_json``) with its bounds sealed (module docstring)."""
        out = dict(chunk)
        for side in _SIDES:
            if chunk[side] is not None:
                nonce = secrets.token_bytes(12)
                text = _aead(self.key).encrypt(nonce, json.dumps(chunk[side]).encode("utf-8"), _where(chunk, side))
                out[side] = {"sealed": base64.b64encode(nonce + text).decode("ascii")}
        return out

    def mask_row(self, db: str, table: str, row: dict[str, Any]) -> dict[str, Any]:
        """A row of values by column name (a snapshot's, a key-less table's read) as the lake keeps it."""
        names = tuple(row)
        return self._image(row, self.of(db, table, names, "exclude"), self.of(db, table, names, "hash")) or {}

    def _image(self, image: dict[str, Any] | None, drop: frozenset[str],
               hashed: frozenset[str]) -> dict[str, Any] | None:
        if image is None:
            return None
        key = self.key
        return {n: hash_value(key, v) if n in hashed else v for n, v in image.items() if n not in drop}


def column_rules(exclude: str | None, hashed: str | None, key: bytes | None) -> ColumnRules | None:
    """The rules of ``--exclude-columns`` / ``--hash-columns`` (None: neither given); a bad regex or a
    missing key is a ``ConfigError``."""
    if exclude is None and hashed is None:
        return None
    patterns: dict[str, re.Pattern[str] | None] = {}
    for flag, text in (("--exclude-columns", exclude), ("--hash-columns", hashed)):
        try:
            patterns[flag] = None if text is None else re.compile(text)
        except re.error as exc:
            raise ConfigError(f"{flag} {text!r} is not a regular expression: {exc}") from None
    return ColumnRules(patterns["--exclude-columns"], patterns["--hash-columns"], key or b"")



def rules_record(rules: ColumnRules | None) -> dict[str, str | None]:
    """What a lake records of the rules its mirrors are written with (module docstring)."""
    if rules is None:
        return {"exclude": None, "hash": None, "key_check": None}
    check = hmac.new(rules.key, _KEY_CHECK, hashlib.sha256).hexdigest()[:16] if rules.hashed is not None else None
    return {"exclude": rules.exclude.pattern if rules.exclude is not None else None,
            "hash": rules.hashed.pattern if rules.hashed is not None else None, "key_check": check}


def rules_difference(recorded: dict[str, Any], rules: ColumnRules | None) -> str | None:
    """How ``rules`` differ from a lake's ``rules_record``, in words (None: they do not). The key is
    compared only when both hash the same columns."""
    mine = rules_record(rules)
    said = []
    for name, flag in (("exclude", "--exclude-columns"), ("hash", "--hash-columns")):
        if recorded.get(name) != mine[name]:
            said.append(f"{flag} {_shown(mine[name])} (the lake's: {_shown(recorded.get(name))})")
    if not said and recorded.get("key_check") not in (None, mine["key_check"]):
        said.append("another hash key than the lake's")
    return "; ".join(said) or None


def _shown(pattern: str | None) -> str:
    return "none" if pattern is None else repr(pattern)


def _aead(key: bytes) -> Any:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(hmac.new(key, _SEAL, hashlib.sha256).digest())


def _where(chunk: dict[str, Any], side: str) -> bytes:
    return f"{chunk['db']}.{chunk['table']}#{chunk['index']}:{side}".encode()


def sealed(chunk: dict[str, Any]) -> bool:
    """Whether a chunk's JSON holds sealed bounds (``ColumnRules.seal_chunk``)."""
    return any(isinstance(chunk.get(side), dict) for side in _SIDES)


def open_chunk(rules: ColumnRules | None, chunk: dict[str, Any]) -> dict[str, Any]:
    """A chunk's JSON with its sealed bounds opened under ``rules``' key (as it is when none are
    sealed); no key, or another key than the one that sealed them, is a ``ConfigError``."""
    if not sealed(chunk):
        return chunk
    name = f"{chunk['db']}.{chunk['table']}"
    remedy = ("its key is hashed and the lake keeps its snapshot's chunk bounds sealed under the hash key: give "
              "the lake's --hash-columns key in the config file's [columns] table")
    if rules is None or not rules.key:
        raise ConfigError(f"{name}: {remedy}")
    from cryptography.exceptions import InvalidTag

    out = dict(chunk)
    for side in _SIDES:
        value = chunk[side]
        if isinstance(value, dict):
            try:
                data = base64.b64decode(value["sealed"], validate=True)
                out[side] = json.loads(_aead(rules.key).decrypt(data[:12], data[12:], _where(chunk, side)))
            except (InvalidTag, KeyError, TypeError, ValueError):
                raise ConfigError(f"{name}: the bounds of snapshot chunk {chunk['index']} do not open under this "
                                  f"key; {remedy}") from None
    return out
