"""The MERGE source of one table's changes in a micro-batch, built column-wise with Arrow when exact.

The per-row path (``sluice.lake.types.table_layout`` decodes each JSON image, ``sluice.lake.sink``
folds the changes per primary key) handles every case: minimal images, partial JSON updates, key
moves that patch a mirror row, snapshot filtering. Most batches need none of it: every image is
full, and every column has an exact column-wise conversion (``sluice.lake.types.read_plans``).
``typed_merge_source`` then reads the images the compiled core typed as it wrote them, and
``merge_source`` (without them) parses the JSON images with ``pyarrow.json`` (explicit schema,
unknown keys an error); both keep the last change per key (an update that moves the key deletes the
old key) and return the same MERGE source the per-row path builds. Each returns None whenever it
cannot prove the result is the same — a column without a conversion, a partial image, a value Arrow
will not convert, a NULL key, a key of a type other than ``read_plan``'s — and the caller takes the
per-row path, which also raises the errors for bad data.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from sluice.lake.types.mirror_columns import MirrorColumn
from sluice.lake.types.read_plans import ReadPlan, as_read, column_plans, read_plan
from sluice.lake.types.typed_images import TypedRows

__all__ = [
    "CHANGE_FILE", "CHANGE_POS", "DELETE_FLAG", "all_full", "fold_sources", "key_bounds", "last_per_key",
    "merge_source", "no_changes", "quote_name", "read_texts", "text_buffers", "typed_merge_source", "without_positions",
]

DELETE_FLAG = "_sluice_delete"  # the MERGE source's column: delete the key (else upsert the row)
# With ``positions``, a source's columns naming the change each row comes from: its binlog file and
# position (the driver's snapshot filter judges a key's last change by them; the MERGE never sees them).
CHANGE_FILE = "_sluice_file"
CHANGE_POS = "_sluice_pos"
_AT = "_sluice_at"  # ``_last_per_key``'s column: the index (in ``rows``) of each row's change

def text_buffers(texts: pa.ChunkedArray) -> list[tuple[pa.Buffer, int]]:
    """Each chunk's texts back to back (its data buffer, zero-copy) and how many texts they are."""
    out = []
    for chunk in texts.chunks:
        n = len(chunk)
        if not n:
            continue
        width = 8 if pa.types.is_large_string(chunk.type) else 4
        offsets = chunk.buffers()[1]
        first = int.from_bytes(offsets[chunk.offset * width: (chunk.offset + 1) * width], "little")
        last = int.from_bytes(offsets[(chunk.offset + n) * width: (chunk.offset + n + 1) * width], "little")
        out.append((chunk.buffers()[2].slice(first, last - first), n))
    return out


def all_full(texts: pa.ChunkedArray, buffers: list[tuple[pa.Buffer, int]], width: int) -> bool:
    """Whether every image names all ``width`` columns. Unknown and repeated keys fail the parse,
    so the count of keys says whether an image is full: every key ends in '":'; inside a string
    every quote is escaped, so '":' there is '\\":' (as is the end of a key ending in a backslash,
    counted short). Without any '\\":' the total count decides for every image at once."""
    total = escaped = 0
    for buffer, _ in buffers:
        data = buffer.to_pybytes()
        total += data.count(b'":')
        if b"\\" in data:
            escaped += data.count(b'\\":')
    if not escaped:
        return total == width * len(texts)
    keys = pc.subtract(pc.count_substring(texts, '":'), pc.count_substring(texts, '\\":'))
    return bool(pc.min(keys).as_py() == width and pc.max(keys).as_py() == width)


def read_texts(buffers: list[tuple[pa.Buffer, int]], schema: pa.Schema, *, strict: bool) -> pa.Table | None:
    """Parse the JSON object texts of ``text_buffers`` into a table of ``schema``, one row per text,
    in order: a chunk's objects back to back are one block of the JSON reader, chunks in parallel."""
    if not buffers:
        return schema.empty_table()
    options = pa_json.ParseOptions(
        explicit_schema=schema, unexpected_field_behavior="error" if strict else "ignore", newlines_in_values=False,
    )

    def parse(item: tuple[pa.Buffer, int]) -> pa.Table | None:
        buffer, n = item
        try:
            table = pa_json.read_json(pa.BufferReader(buffer), parse_options=options, read_options=pa_json.ReadOptions(
                use_threads=False, block_size=max(1 << 16, buffer.size + 1)))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        return table if table.num_rows == n else None

    if len(buffers) == 1:
        tables = [parse(buffers[0])]
    else:
        with ThreadPoolExecutor(max_workers=min(len(buffers), os.cpu_count() or 1)) as pool:
            tables = list(pool.map(parse, buffers))
    if any(t is None for t in tables):
        return None
    return pa.concat_tables(tables).select(schema.names)


def _usable(columns: Sequence[MirrorColumn], primary_key: Sequence[str], rows: pa.Table,
            side: int) -> list[ReadPlan] | None:
    """Each column's plan (``side`` of ``column_plans``: 0 the JSON images, 1 the typed ones; a key
    column only ``read_plan``'s), when a table's rows can take the column-wise path at all."""
    if not primary_key or rows.num_rows == 0:
        return None
    names = [c.name for c in columns]
    if not set(primary_key) <= set(names) or len(set(names)) != len(names):
        return None
    if any(n.startswith("_sluice_") for n in names):
        return None
    plans = [read_plan(c) if c.name in primary_key else column_plans(c)[side] for c in columns]
    if any(p is None for p in plans):
        return None
    if rows.column("json_diffs").null_count != rows.num_rows:
        return None
    return cast("list[ReadPlan]", plans)


def merge_source(columns: Sequence[MirrorColumn], primary_key: Sequence[str], rows: pa.Table, *,
                 positions: bool = False) -> pa.Table | None:
    """The MERGE source (``sluice.lake.sink``: the mirror's columns and ``DELETE_FLAG``, one
    row per key touched) of one table's rows of the change DataFrame, in binlog order; None when
    the per-row path must build it. ``positions``: with ``CHANGE_FILE`` and ``CHANGE_POS`` too."""
    return _placed(_merge_source(columns, primary_key, rows), rows, positions)


def _merge_source(columns: Sequence[MirrorColumn], primary_key: Sequence[str], rows: pa.Table) -> pa.Table | None:
    plans = _usable(columns, primary_key, rows, 0)
    if plans is None:
        return None
    op = rows.column("op")
    is_insert, is_update, is_delete = (pc.fill_null(pc.equal(op, o), False) for o in ("insert", "update", "delete"))
    counts = [pc.sum(pc.cast(m, pa.int64())).as_py() or 0 for m in (is_insert, is_update, is_delete)]
    if sum(counts) != rows.num_rows:
        return None
    need_after = pc.or_(is_insert, is_update)
    need_before = pc.or_(is_update, is_delete)
    after = rows.column("after").filter(need_after)
    before = rows.column("before").filter(need_before)
    if after.null_count or before.null_count:
        return None
    after_buffers = text_buffers(after)
    if not all_full(after, after_buffers, len(columns)):  # a minimal image: the per-row path patches
        return None
    read_schema = pa.schema([pa.field(c.name, p[0]) for c, p in zip(columns, plans, strict=True)])
    parsed_after = read_texts(after_buffers, read_schema, strict=True)
    key_schema = pa.schema([read_schema.field(k) for k in primary_key])
    parsed_before = read_texts(text_buffers(before), key_schema, strict=False)
    if parsed_after is None or parsed_before is None:
        return None
    after_values = {c.name: parsed_after.column(c.name).combine_chunks() for c in columns}
    before_keys = {k: parsed_before.column(k).combine_chunks() for k in primary_key}
    return _finished(columns, primary_key, plans, rows.num_rows, (is_update, need_after, need_before),
                     after_values, before_keys)


def typed_merge_source(columns: Sequence[MirrorColumn], primary_key: Sequence[str], rows: pa.Table,
                       typed: TypedRows, *, positions: bool = False) -> pa.Table | None:
    """``merge_source`` from the images the compiled core typed as it wrote them (``typed``, the
    same changes as ``rows``) instead of their JSON text: the same table, or None where either
    would be None (then ``merge_source`` decides)."""
    return _placed(_typed_merge_source(columns, primary_key, rows, typed), rows, positions)


def _typed_merge_source(columns: Sequence[MirrorColumn], primary_key: Sequence[str], rows: pa.Table,
                        typed: TypedRows) -> pa.Table | None:
    plans = _usable(columns, primary_key, rows, 1)
    if plans is None or len(typed.ops) != rows.num_rows or set(typed.after) != {c.name for c in columns}:
        return None
    after_values, before_keys = {}, {}
    for c, (kind, _finish) in zip(columns, plans, strict=True):
        values = as_read(typed.after[c.name], kind)
        if values is None:
            return None
        after_values[c.name] = values
        if c.name in primary_key:
            old = as_read(typed.before[c.name], kind)
            if old is None:
                return None
            before_keys[c.name] = old
    ops = pa.array(typed.ops)
    named = pc.index_in(rows.column("op"), value_set=pa.array(["insert", "update", "delete"]))
    if named.null_count or not pc.all(pc.equal(pc.cast(named, pa.uint8()), ops)).as_py():
        return None  # not the same changes
    is_update = pc.equal(ops, 1)
    masks = (is_update, pc.not_equal(ops, 2), pc.not_equal(ops, 0))
    return _finished(columns, primary_key, plans, rows.num_rows, masks, after_values, before_keys)


def _placed(source: pa.Table | None, rows: pa.Table, positions: bool) -> pa.Table | None:
    """``source`` without ``_last_per_key``'s change indices, or (``positions``) with the binlog file
    and position of each row's change in their place."""
    if source is None:
        return None
    at = source.column(_AT)
    source = source.drop_columns([_AT])
    if not positions:
        return source
    return source.append_column(CHANGE_FILE, rows.column("file").take(at)).append_column(
        CHANGE_POS, rows.column("pos").take(at))


def no_changes(columns: Sequence[MirrorColumn], *, positions: bool = False) -> pa.Table:
    """The MERGE source of rows that change no mirror row (a system-versioned table's history
    ops): no row, the columns ``merge_source`` gives."""
    fields = [pa.field(c.name, c.arrow_type) for c in columns] + [pa.field(DELETE_FLAG, pa.bool_())]
    if positions:
        fields += [pa.field(CHANGE_FILE, pa.string()), pa.field(CHANGE_POS, pa.int64())]
    return pa.schema(fields).empty_table()


def without_positions(source: pa.Table) -> pa.Table:
    """A staged source as the MERGE takes it: without ``CHANGE_FILE`` and ``CHANGE_POS``."""
    return source.drop_columns([n for n in (CHANGE_FILE, CHANGE_POS) if n in source.column_names])


def _finished(columns: Sequence[MirrorColumn], primary_key: Sequence[str], plans: list[ReadPlan], n: int,
              masks: tuple[pa.Array, pa.Array, pa.Array], after_values: dict[str, pa.Array],
              before_keys: dict[str, pa.Array]) -> pa.Table | None:
    """The mirror's values from the values as read, and the last change per key."""
    is_update, need_after, need_before = masks
    finish = {c.name: p[1] for c, p in zip(columns, plans, strict=True)}
    image_columns: dict[str, pa.Array] = {}
    for c in columns:
        values = finish[c.name](after_values[c.name])
        if values is None:
            return None
        image_columns[c.name] = values
    old_keys: dict[str, pa.Array] = {}
    for k in primary_key:
        values = finish[k](before_keys[k])
        if values is None or values.null_count:
            return None
        old_keys[k] = values
    if any(image_columns[k].null_count for k in primary_key):
        return None
    return _last_per_key(columns, primary_key, n, need_after, need_before, is_update, image_columns, old_keys)


def _last_per_key(columns: Sequence[MirrorColumn], primary_key: Sequence[str], n: int, need_after: pa.Array,
                  need_before: pa.Array, is_update: pa.Array, image: dict[str, pa.Array],
                  old: dict[str, pa.Array]) -> pa.Table:
    """Events in binlog order — an upsert of each after image, a delete of each delete's key and of
    each key an update moved away from — and the last one per key, as the MERGE source (and ``_AT``)."""
    import numpy as np

    at = np.arange(n, dtype=np.int64)
    after_at = at[need_after.to_numpy(zero_copy_only=False)]  # change index of each after image
    before_at = at[need_before.to_numpy(zero_copy_only=False)]  # ... and of each before image
    after_upd = is_update.filter(need_after).to_numpy(zero_copy_only=False)
    before_upd = is_update.filter(need_before).to_numpy(zero_copy_only=False)
    # The k-th update's after image and before image: the k-th update among each.
    upd_after, upd_before = np.flatnonzero(after_upd), np.flatnonzero(before_upd)
    deleted = ~before_upd  # which before images delete their key: every delete's ...
    if len(upd_after):
        moved = np.zeros(len(upd_after), dtype=bool)
        for k in primary_key:
            differs = pc.not_equal(image[k].take(pa.array(upd_after)), old[k].take(pa.array(upd_before)))
            moved |= differs.to_numpy(zero_copy_only=False)
        deleted[upd_before[moved]] = True  # ... and every update's that moved the key away
    delete_index = pa.array(np.flatnonzero(deleted))
    # Sequence numbers: a change's delete of its old key comes before its upsert of the new one.
    events = pa.table({
        **{f"k{j}": pa.concat_arrays([image[k], old[k].take(delete_index)]) for j, k in enumerate(primary_key)},
        "seq": pa.array(np.concatenate([after_at * 2 + 1, before_at[np.flatnonzero(deleted)] * 2])),
        "img": pa.concat_arrays([pa.array(np.arange(len(after_at), dtype=np.int64)),
                                 pa.nulls(len(delete_index), pa.int64())]),
    })
    last = events.group_by([f"k{j}" for j in range(len(primary_key))], use_threads=False).aggregate(
        [("seq", "max")]
    )
    # Back from the winning sequence numbers to their events (sequence numbers are unique).
    seq = events.column("seq").to_numpy()
    order = np.argsort(seq, kind="stable")
    winners = order[np.sort(np.searchsorted(seq[order], last.column("seq_max").to_numpy()))]  # binlog order
    chosen = events.take(pa.array(winners))
    img = chosen.column("img").combine_chunks()
    arrays: list[pa.Array] = []
    fields: list[pa.Field] = []
    pk_pos = {k: j for j, k in enumerate(primary_key)}
    for c in columns:
        j = pk_pos.get(c.name)
        values = chosen.column(f"k{j}").combine_chunks() if j is not None else image[c.name].take(img)
        arrays.append(values)
        fields.append(pa.field(c.name, c.arrow_type))
    arrays.append(pc.is_null(img))
    fields.append(pa.field(DELETE_FLAG, pa.bool_()))
    arrays.append(pa.array(seq[winners] // 2))
    fields.append(pa.field(_AT, pa.int64()))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def fold_sources(sources: Sequence[pa.Table], primary_key: Sequence[str]) -> pa.Table:
    """One MERGE source from the sources of consecutive ranges, given in binlog order: a key's row
    in a later range wins (each source holds the last state of every key its range touched)."""
    import numpy as np

    if len(sources) == 1:
        return sources[0]
    if len(primary_key) == 1 and all(pa.types.is_integer(s.schema.field(primary_key[0]).type) for s in sources):
        # One integer key: each row's key as numpy, the last row of each key found by a sort, and
        # each source filtered down to its winners; nothing is copied but the rows kept.
        keys = [s.column(primary_key[0]).to_numpy() for s in sources]
        if all(len(k) == len(s) and k.dtype.kind in "iu" for k, s in zip(keys, sources, strict=True)):
            flat = np.concatenate(keys)
            _, first_from_end = np.unique(flat[::-1], return_index=True)
            keep = np.zeros(len(flat), dtype=bool)
            keep[len(flat) - 1 - first_from_end] = True
            bounds = np.cumsum([0, *(len(k) for k in keys)])
            return pa.concat_tables([s.filter(pa.array(keep[bounds[i]:bounds[i + 1]]))
                                     for i, s in enumerate(sources)])
    return _fold_grouped(sources, primary_key)


def _fold_grouped(sources: Sequence[pa.Table], primary_key: Sequence[str]) -> pa.Table:
    """``fold_sources`` for keys of any types, by an Arrow group-by."""
    return last_per_key(pa.concat_tables(sources).combine_chunks(), primary_key)


def last_per_key(rows: pa.Table, primary_key: Sequence[str]) -> pa.Table:
    """``rows`` with one row per key, the last of each, in their order."""
    import numpy as np

    at = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    keys = pa.table({**{f"k{j}": rows.column(k) for j, k in enumerate(primary_key)}, "at": at})
    last = keys.group_by([f"k{j}" for j in range(len(primary_key))], use_threads=False).aggregate([("at", "max")])
    return rows.take(pa.array(np.sort(last.column("at_max").to_numpy())))


def key_bounds(source: pa.Table, key: str) -> str:
    """The range of a MERGE source's ``key`` column as a predicate on the target (`` AND ...``, or
    nothing): every target row a source key matches lies in it, and delta-rs then skips the
    mirror's files outside it instead of scanning the whole table. Integer and text keys only,
    whose literals are exact."""
    if key not in source.column_names or not len(source):
        return ""
    column = source.column(key)
    if not (pa.types.is_integer(column.type) or pa.types.is_string(column.type)):
        return ""
    bounds = pc.min_max(column)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is None or high is None:
        return ""
    if isinstance(low, str):
        low, high = ("'" + str(v).replace("'", "''") + "'" for v in (low, high))
    name = quote_name(key)
    return f" AND target.{name} >= {low} AND target.{name} <= {high}"


def quote_name(name: str) -> str:
    """A column name as delta-rs' SQL predicates take it."""
    return "`" + name.replace("`", "``") + "`"
