"""A routed mirror (``--route``) as ``sluice verify`` reads it: the rows one of its tables holds
(those whose ``_source_db`` / ``_source_table`` name it), with that table's own columns, and the
verdict fields of the mirror itself, which counts the rows that name no routed table."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake.exceptions import DeltaError

from sluice.cdc.routes import SOURCE_COLUMNS, SOURCE_DB, SOURCE_TABLE
from sluice.cdc.schema.model import TableSchema
from sluice.lake.layout import Lake
from sluice.spark.verify.datasets import mirror_dataset

__all__ = ["ShardRows", "routed_into", "routed_tables", "shard_rows", "stray_verdict"]

Name = tuple[str, str]


def routed_into(routes: Any, db: str, table: str) -> Name | None:
    """The routed mirror of ``db.table`` by ``routes`` (the lake's ``Routes``, None: none)."""
    return routes.target(db, table) if routes is not None else None


def routed_tables(routes: Any, schemas: Iterable[Any], captured: Callable[[str, str], bool] | None) -> dict[Name, Name]:
    """Each routed table among ``schemas`` the run captures -> its routed mirror."""
    return {(s.db, s.name): target for s in schemas if (target := routed_into(routes, s.db, s.name)) is not None
            and (captured is None or captured(s.db, s.name))}


def shard_rows(dataset: Any, db: str, table: str, schema: TableSchema | None = None) -> ShardRows:
    """The rows of a routed mirror's dataset that ``db.table`` holds, with the columns of its
    ``schema`` (None: every column but the two source columns)."""
    return ShardRows(dataset, db, table, None if schema is None else [c.name for c in schema.columns])


class ShardRows:
    """The rows of a routed mirror that one table holds, read a batch at a time as a dataset is
    (``schema``, ``count_rows``, ``to_batches``) with the table's own columns: the two source columns
    and the columns of other tables are left out (``foreign_values`` counts the rows that hold a
    value in those). Delta's strings read as ``string_view``, which Arrow's filter kernels do not
    take: such columns are read as ``string`` (``binary``)."""

    def __init__(self, dataset: Any, db: str, table: str, own: Iterable[str] | None = None) -> None:
        self.dataset = dataset
        self.db = db
        self.table = table
        mine = None if own is None else {name.lower() for name in own}
        fields = [f for f in dataset.schema if f.name not in SOURCE_COLUMNS]
        self.schema = pa.schema([pa.field(f.name, _plain(f.type)) for f in fields
                                 if mine is None or f.name.lower() in mine])
        self.foreign = [f.name for f in fields if mine is not None and f.name.lower() not in mine]

    def _mask(self, batch: pa.RecordBatch) -> pa.Array:
        dbs = pc.cast(batch.column(SOURCE_DB), pa.string())
        tables = pc.cast(batch.column(SOURCE_TABLE), pa.string())
        return pc.and_(pc.equal(dbs, self.db), pc.equal(tables, self.table))

    def count_rows(self) -> int:
        """The table's rows in the mirror."""
        return sum(pc.sum(self._mask(b)).as_py() or 0 for b in self.dataset.to_batches(columns=list(SOURCE_COLUMNS)))

    def foreign_values(self) -> int:
        """How many of the table's rows hold a value in a column of the mirror the table lacks."""
        found = 0
        for batch in self.dataset.to_batches(columns=[*self.foreign, *SOURCE_COLUMNS]) if self.foreign else ():
            valued = functools.reduce(pc.or_, [pc.is_valid(batch.column(n)) for n in self.foreign])
            held = pc.and_(self._mask(batch), valued)
            found += pc.sum(held).as_py() or 0
        return found

    def to_batches(self, columns: list[str]) -> Iterator[pa.RecordBatch]:
        """The table's rows, ``columns`` of them, in batches."""
        read = list(dict.fromkeys([*columns, *SOURCE_COLUMNS]))
        schema = pa.schema([self.schema.field(name) for name in columns])
        for batch in self.dataset.to_batches(columns=read):
            mask = self._mask(batch)
            arrays = [pc.cast(batch.column(name), schema.field(name).type) for name in columns]
            yield pa.RecordBatch.from_arrays(arrays, schema=schema).filter(mask)


def _plain(t: pa.DataType) -> pa.DataType:
    """``t`` with its view types (``string_view``, ``binary_view``) as the plain ones, nested too."""
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        make = pa.list_ if pa.types.is_list(t) else pa.large_list
        return make(pa.field(t.value_field.name, _plain(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(t.field(i).name, _plain(t.field(i).type)) for i in range(t.num_fields)])
    return t


def stray_verdict(store: Lake, target: tuple[str, str], shards: Mapping[tuple[str, str], tuple[str, str]],
                  ) -> tuple[int, int, int, int, int, bool, str]:
    """A routed mirror's verdict after its ``db.table``: (source rows, mirror rows, missing, extra,
    different, ok, note), its extra rows those that name none of the routed tables ``shards``
    (table -> its mirror) sends to it; its rows are compared table by table."""
    path = store.mirror(*target)
    tables = {name for name, into in shards.items() if into == target}
    try:
        dataset = mirror_dataset(store, path, *target)
        rows = dataset.to_table(columns=list(SOURCE_COLUMNS))
    except (DeltaError, OSError, pa.ArrowException) as exc:
        return 0, 0, 0, 0, 0, False, f"the routed mirror at {path} cannot be read ({exc})"
    names = zip(rows.column(SOURCE_DB).to_pylist(), rows.column(SOURCE_TABLE).to_pylist(), strict=True)
    strays = sum(1 for name in names if name not in tables)
    note = f"routed mirror of {len(tables)} tables, each compared on its own line" + (
        f"; {strays} rows name a source table no route sends here (dropped or renamed away?)" if strays else "")
    return rows.num_rows - strays, rows.num_rows, 0, strays, 0, not strays, note
