"""DDL on a table ``--route`` sends into the mirror of several (``sluice.lake.mirror.routed``): the
mirror steps of one statement, made the routed mirror's, and the two steps only it has.

The mirror holds the other tables' rows, so no step on one table moves, archives, empties or
rewrites it. ``route_steps`` turns the steps ``plan_ddl`` planned for a routed table into:

- ``widen``: an ALTER that only adds columns whose existing rows are NULL (and changes no column's
  mirror type): the columns are added to the mirror, NULL for every table's rows;
- ``unroute``: a DROP or TRUNCATE of the table, or a RENAME away: its rows leave the mirror (one
  Delta delete on ``_source_db`` / ``_source_table``);
- ``reread``: anything else (an added column with a value, a dropped, renamed or converted column, a
  statement sluice does not understand): the table's rows leave the mirror and the table is read
  again into it (the snapshot's ``RoutedChunks``);
- ``create``: a new table of the route makes the mirror if it has none.

Before any of it the layout the statement leaves is checked (``routed_layout`` on the catalog after
it): a column whose type one table changed so that the mirror cannot hold it for the others, or a key
that now differs, is a ``RouteConflictError`` naming both definitions and both tables; so is a column
the mirror already holds as another type (``check_mirror``). Both steps are idempotent, so a DDL batch
replayed after a crash does them once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deltalake import DeltaTable
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import DeltaError

from sluice.cdc.routes import Routes
from sluice.cdc.schema import Catalog, apply_ddl
from sluice.errors import DataLossError, RouteConflictError
from sluice.lake.mirror.routed import RoutedLayout, column_names, delete_rows, routed_layout
from sluice.lake.sink import DeltaLake
from sluice.lake.types.mirror_columns import MirrorColumn, columns_to_add, mirror_schema
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.ddl.plan import MirrorStep

__all__ = ["ROUTED_KINDS", "check_mirror", "route_steps", "run_routed"]

ROUTED_KINDS = frozenset({"widen", "unroute"})  # the steps only a routed mirror takes

Name = tuple[str, str]


def route_steps(steps: list[MirrorStep], routes: Routes, before: Catalog, sql: str, default_db: str | None,
                captured: Callable[[str, str], bool], mirror: Callable[[Name], DeltaTable | None],
                columns: Any = None) -> list[MirrorStep]:
    """The statement's ``steps`` (``plan_ddl``'s) with those of routed tables made the routed mirror's
    (module docstring); ``mirror``: a routed mirror as it stands (None: none yet). A layout the routed
    tables cannot share, or the mirror cannot take, raises ``RouteConflictError``."""
    if not any(routes.target(s.db, s.table) or (s.to and routes.target(*s.to)) for s in steps):
        return steps
    after, _ = apply_ddl(before, sql, default_db or None)
    schemas = [s for s in after.tables() if captured(s.db, s.name)]
    mask = columns.mask_schema if columns is not None else None
    out: list[MirrorStep] = []
    for step in steps:
        target = routes.target(step.db, step.table)
        if step.kind == "move" and step.to is not None:
            if target is None and routes.target(*step.to) is None:
                out.append(step)
                continue
            out.append(MirrorStep("unroute", step.db, step.table, to=target, why=f"renamed to {step.to[0]}."
                                  f"{step.to[1]}") if target else MirrorStep("archive", step.db, step.table,
                                                                             why="renamed into a routed mirror"))
            out.append(MirrorStep("reread", *step.to, why=f"renamed from {step.name}"))
            continue
        if target is None:
            out.append(step)
            continue
        dt = mirror(target)
        order = column_names(dt)
        layout = routed_layout(routes, target, schemas, after.flavor, mask, order) if any(
            routes.target(s.db, s.name) == target for s in schemas) else None
        if layout is not None and dt is not None:
            check_mirror(dt, layout, target)
        if step.kind in ("archive", "truncate"):
            out.append(MirrorStep("unroute", step.db, step.table, to=target, why=step.why or step.kind))
        elif step.kind == "create":
            if layout is not None:
                out.append(MirrorStep("create", *target, columns=layout.columns))
        elif step.kind == "rewrite" and layout is not None and _adds_nulls(step, before, after, mask):
            out.append(MirrorStep("widen", step.db, step.table, to=target, columns=layout.columns))
        elif step.kind == "rewrite":
            out.append(MirrorStep("reread", step.db, step.table, why="its columns changed in a way the routed "
                                  "mirror takes only by reading it again"))
        else:
            out.append(step)
    return out


def _adds_nulls(step: MirrorStep, before: Catalog, after: Catalog, mask: Any) -> bool:
    """Whether a rewrite only adds columns that are NULL in the existing rows, every other column
    kept as it was in the mirror."""
    was, now = before.get(step.db, step.table), after.get(step.db, step.table)
    if was is None or now is None:
        return False
    if mask is not None:
        was, now = mask(was), mask(now)
    old = {c.name: c.arrow_type for c in mirror_columns_for_schema(was, before.flavor)}
    new = {c.name: c.arrow_type for c in mirror_columns_for_schema(now, after.flavor)}
    for o in step.origins:
        if o.source is None:
            if o.fill is None or not o.fill.exact or o.fill.value is not None:
                return False
        elif o.source != o.name or old.get(o.source) != new.get(o.name):
            return False
    return set(old) <= {o.source for o in step.origins}  # no column dropped


def check_mirror(dt: DeltaTable, layout: RoutedLayout | tuple[MirrorColumn, ...], target: Name) -> list[MirrorColumn]:
    """The columns the routed mirror ``dt`` lacks; a column it holds as another type is a
    ``RouteConflictError`` naming the mirror's type and the new definition."""
    columns = layout.columns if isinstance(layout, RoutedLayout) else layout

    def conflict(col: MirrorColumn, have: str, want: str) -> RouteConflictError:
        return RouteConflictError(
            f"column {col.name} of the routed mirror {target[0]}.{target[1]} holds Delta type {have}, and a "
            f"routed table now defines it as {col.mysql_type} ({want}): one mirror column cannot hold both. Give "
            "the column its old type again, or start the mirror over (remove it, then sluice snapshot every table "
            "routed to it)")

    return columns_to_add(dt, columns, conflict)


def run_routed(lake: DeltaLake, step: MirrorStep, progress: Callable[[str], None]) -> None:
    """Run a ``widen`` or ``unroute`` step on the routed mirror ``step.to``."""
    assert step.to is not None
    path = lake.table_path(*step.to)
    into = f"the routed mirror {step.to[0]}.{step.to[1]}"
    if step.kind == "unroute":
        gone = delete_rows(path, lake.options, step.db, step.table)
        progress(f"DDL: {step.name} ({step.why}) — its {gone} rows left {into}")
        return
    dt = lake.table(path)
    if dt is None:
        lake.create_mirror(*step.to, step.columns)
        return
    missing = check_mirror(dt, step.columns, step.to)
    if missing:
        try:
            dt.alter.add_columns(list(DeltaSchema.from_arrow(mirror_schema(missing)).fields))
        except DeltaError as exc:
            raise DataLossError(f"adding columns to {into} ({path}) failed ({exc}); nothing of it was committed. "
                                "Fix the cause (storage, permissions) and restart") from exc
        progress(f"DDL: {step.name} added {', '.join(c.name for c in missing)} to {into}, NULL for every "
                 "table's rows until they are written")
