"""One table's row changes as typed Arrow columns: each row image a struct of the mirror's types.

``change_table`` takes a table's rows of the change schema (``sluice.lake.changelog.schema``:
JSON images, all of one column layout) and, where the compiled core kept them, the same changes'
typed images (``TypedRows``), and returns one row per change (``typed_change_schema``):

| column | type | meaning |
|---|---|---|
| op, db, table | string | as in the change schema |
| before, after | struct | the image's columns in their mirror types (``lake.types.mirror_columns``); null: no image |
| absent | list<string> | what a minimal image left out, as ``before.NAME`` / ``after.NAME``; null: images whole |
| json_diffs, file, pos, row, gtid, ts, commit_ts | | as in the change schema |

Three ways give the same table. The typed images are read when every column has an exact
column-wise conversion (``sluice.lake.types.read_plans``) and every image is whole; otherwise Arrow
parses the JSON images under the same conditions; otherwise each image is decoded and converted as the
mirror's per-row path does (``exact_only`` asks for that way), which is also where a value that does
not fit its column raises ``SchemaError``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sluice.lake.changelog.schema import CHANGE_ARROW_SCHEMA
from sluice.lake.mirror.merge_source import all_full, read_texts, text_buffers
from sluice.lake.types.images import image_decoder
from sluice.lake.types.mirror_columns import MirrorColumn, to_arrow_table
from sluice.lake.types.read_plans import ReadPlan, as_read, column_plans
from sluice.lake.types.typed_images import TypedRows

__all__ = ["change_table", "typed_change_schema"]

_KEPT = ("json_diffs", "file", "pos", "row", "gtid", "ts", "commit_ts")  # change-schema columns kept as they are
_SIDES = ("before", "after")
_OPS = pa.array(["insert", "update", "delete"])  # the typed images' op codes 0, 1, 2


def typed_change_schema(columns: Sequence[MirrorColumn]) -> pa.Schema:
    """The schema of ``change_table`` for a table of ``columns``."""
    image = pa.struct([pa.field(c.name, c.arrow_type) for c in columns])
    return pa.schema([
        pa.field("op", pa.string()), pa.field("db", pa.string()), pa.field("table", pa.string()),
        pa.field("before", image), pa.field("after", image), pa.field("absent", pa.list_(pa.string())),
        *(CHANGE_ARROW_SCHEMA.field(name) for name in _KEPT),
    ])


def change_table(columns: Sequence[MirrorColumn], rows: pa.Table, typed: TypedRows | None = None, *,
                 exact_only: bool = False) -> pa.Table:
    """``rows`` (one table's changes in the change schema, binlog order) with typed images."""
    images = None if exact_only else _columnwise(columns, rows, typed)
    if images is None:
        images = _per_row(columns, rows)
    before, after, absent = images
    arrays = [rows.column("op"), rows.column("db"), rows.column("table"), before, after, absent,
              *(rows.column(name) for name in _KEPT)]
    return pa.Table.from_arrays(arrays, schema=typed_change_schema(columns))


def _columnwise(columns: Sequence[MirrorColumn], rows: pa.Table,
                typed: TypedRows | None) -> tuple[pa.Array, pa.Array, pa.Array] | None:
    """Both images' structs read column-wise where a column has an exact way (the others decoded
    image by image, those columns only), or None when whole images cannot be proven."""
    names = [c.name for c in columns]
    n = rows.num_rows
    if not n or len(set(names)) != len(names) or rows.column("json_diffs").null_count != n:
        return None
    plans = {c.name: column_plans(c) for c in columns}
    usable = typed is not None and _same_changes(rows, typed, names)  # then every image is whole
    out = []
    for side in _SIDES:
        texts = rows.column(side)
        valid = pc.is_valid(texts).to_numpy(zero_copy_only=False)
        if not valid.any():  # no image on this side: nothing to read (an empty read proves nothing)
            out.append(_struct(columns, [pa.nulls(n, c.arrow_type) for c in columns], valid))
            continue
        values = _typed_side(columns, plans, getattr(typed, side)) if typed is not None and usable else {}
        by_reader = [c for c in columns if c.name not in values and plans[c.name][0] is not None]
        rest = tuple(c for c in columns if c.name not in values and plans[c.name][0] is None)
        present = texts.filter(pa.array(valid)) if by_reader or rest else None
        if present is not None and not usable:
            buffers = text_buffers(present)
            if not all_full(present, buffers, len(columns)):
                return None
        if by_reader:
            assert present is not None
            schema = pa.schema([pa.field(c.name, plans[c.name][0][0]) for c in by_reader])  # type: ignore[index]
            parsed = read_texts(text_buffers(present), schema, strict=len(by_reader) == len(columns))
            if parsed is None:
                return None
            for c in by_reader:
                done = plans[c.name][0][1](parsed.column(c.name).combine_chunks())  # type: ignore[index]
                if done is None or done.type != c.arrow_type:
                    return None
                values[c.name] = done
        if rest:
            assert present is not None
            decode = image_decoder(rest)
            decoded = to_arrow_table(rest, [decode(text) or {} for text in present.to_pylist()])
            values.update((c.name, decoded.column(c.name).combine_chunks()) for c in rest)
        out.append(_struct(columns, _spread([values[name] for name in names], valid), valid))
    return out[0], out[1], pa.nulls(n, pa.list_(pa.string()))


def _same_changes(rows: pa.Table, typed: TypedRows, names: list[str]) -> bool:
    """Whether ``typed`` holds the images of exactly ``rows``' changes: the same ops in the same
    order, an after image for each insert and update, a before image for each update and delete."""
    if len(typed.ops) != rows.num_rows or not set(typed.after) | set(typed.before) <= set(names):
        return False
    ops = pa.array(typed.ops)
    named = pc.index_in(rows.column("op"), value_set=_OPS)
    if named.null_count or not pc.all(pc.equal(pc.cast(named, pa.uint8()), ops)).as_py():
        return False
    has_after = pc.is_valid(rows.column("after"))
    has_before = pc.is_valid(rows.column("before"))
    return bool(pc.all(pc.equal(has_after, pc.not_equal(ops, 2))).as_py()
                and pc.all(pc.equal(has_before, pc.not_equal(ops, 0))).as_py())


def _typed_side(columns: Sequence[MirrorColumn], plans: dict[str, tuple[ReadPlan | None, ReadPlan | None]],
                images: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """The columns the typed images hold and convert exactly, in their mirror types."""
    out = {}
    for c in columns:
        plan = plans[c.name][1]
        if plan is None or c.name not in images:
            continue
        read = as_read(images[c.name], plan[0])
        done = None if read is None else plan[1](read)
        if done is not None and done.type == c.arrow_type:
            out[c.name] = done
    return out


def _spread(values: list[pa.Array], valid: np.ndarray) -> list[pa.Array]:
    """``values`` of the rows with ``valid`` set, in order, spread over all rows (null elsewhere)."""
    if valid.all():
        return values
    at = pa.array(np.cumsum(valid) - 1, mask=~valid)
    return [v.take(at) for v in values]


def _struct(columns: Sequence[MirrorColumn], values: list[pa.Array], valid: np.ndarray) -> pa.Array:
    """One image per row as a struct: ``values`` one array per column, null where ``valid`` is not set."""
    fields = [pa.field(c.name, c.arrow_type) for c in columns]
    return pa.StructArray.from_arrays(values, fields=fields, mask=None if valid.all() else pa.array(~valid))


def _per_row(columns: Sequence[MirrorColumn], rows: pa.Table) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Both images' structs by decoding each image (the mirror's per-row path), with ``absent``."""
    decode = image_decoder(tuple(columns))
    n = rows.num_rows
    absent: list[list[str] | None] = [None] * n
    out = []
    for side in _SIDES:
        images = [decode(text) for text in rows.column(side).to_pylist()]
        table = to_arrow_table(columns, [image or {} for image in images])
        valid = np.array([image is not None for image in images], dtype=bool)
        width = len(columns)
        for i, image in enumerate(images):
            if image is not None and len(image) < width:
                missing = [f"{side}.{c.name}" for c in columns if c.name not in image]
                absent[i] = (absent[i] or []) + missing
        out.append(_struct(columns, [table.column(j).combine_chunks() for j in range(width)], valid))
    return out[0], out[1], pa.array(absent, type=pa.list_(pa.string()))
