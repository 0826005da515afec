"""Change records as rows of the change log: the constant part of a row (its "meta") and its JSON
texts, as the compiled core's ``ChangeRows`` holds them.

A row change's ``before`` / ``after`` / ``json_diffs`` are JSON text in the contract's value
encoding (``cdc.jsonl``); op, db, table, pk and file are the same for every row of a rows event and
travel as one meta tuple ``(op, db, table, pk, file, ddl)``. A DDL record's row names its first
table, has no images and carries ``ddl_json``. ``sluice.spark.source.change_frame`` turns these rows into the
change DataFrame's Arrow batches.
"""

from __future__ import annotations

import json

from sluice.cdc.committed import DdlRecord
from sluice.cdc.jsonl import json_text
from sluice.cdc.records import OP_OF_KIND, RowChange

__all__ = ["META_FIELDS", "Meta", "ddl_json", "kind_metas", "record_row"]

Meta = tuple[str, str, "str | None", tuple[str, ...], str, "str | None"]  # op, db, table, pk, file, ddl
#: The change-schema columns a ``Meta`` holds, in its order.
META_FIELDS = ("op", "db", "table", "pk", "file", "ddl")


def ddl_json(record: DdlRecord) -> str:
    """The ``ddl`` column of a DDL record."""
    return json.dumps({
        "sql": record.sql, "kind": record.kind, "tables": [f"{db}.{t}" for db, t in record.tables],
        "understood": record.understood, "default_db": record.default_db,
    }, ensure_ascii=False)


def kind_metas(db: str, table: str, pk: tuple[str, ...], file: str) -> tuple[Meta, Meta, Meta]:
    """The metas of a table's write, update and delete rows in ``file``."""
    return tuple((OP_OF_KIND[kind], db, table, pk, file, None)  # type: ignore[return-value]
                 for kind in ("write", "update", "delete"))


def record_row(record: RowChange | DdlRecord) -> tuple[Meta, str | None, str | None, str | None, int, int, int]:
    """``(meta, before, after, json_diffs, pos, row, ts µs)`` of a change record."""
    if isinstance(record, DdlRecord):
        table = record.tables[0][1] if record.tables else None
        meta: Meta = ("ddl", record.db, table, (), record.file, ddl_json(record))
        return meta, None, None, None, record.pos, 0, record.ts * 1_000_000
    meta = (record.op, record.db, record.table, record.pk, record.file, None)
    return (meta, json_text(record.before), json_text(record.after), json_text(record.json_diffs), record.pos,
            record.row, record.ts * 1_000_000)
