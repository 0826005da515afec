"""SchemaTracker on real TABLE_MAP events: the golden binlogs of tests/data (written with
``binlog_row_metadata=FULL``) as they are, and with their optional metadata taken away to stand for
MariaDB's NO_LOG / MySQL's MINIMAL maps. Rows decoded with the tracked schema must equal the rows
decoded with the server's own metadata."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import sluice
from sluice.binlog import rowplan
from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.events import QueryEvent, RowsEvent, TableMapEvent
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.cdc.schema import Catalog, SchemaHistory, SchemaTracker, apply_ddl, check_table_map
from sluice.errors import SchemaError
from sluice.io.binlog_file import iter_events

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[3] / "data"

# The DDL of tools/capture_golden.py.
MATRIX = """CREATE TABLE golden.matrix (
    id INT PRIMARY KEY,
    ti TINYINT, biu BIGINT UNSIGNED, fl FLOAT, db DOUBLE,
    d65 DECIMAL(65,30), d10 DECIMAL(10,2), dt DATE, dtm DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2),
    yr YEAR, c10 CHAR(10), vc VARCHAR(100) CHARACTER SET utf8mb4, lat VARCHAR(20) CHARACTER SET latin1,
    bn BINARY(4), vb VARBINARY(20), tx TEXT, bl BLOB, en ENUM('a','bb','ccc'), st SET('x','y','z'),
    b12 BIT(12), b64 BIT(64), pt POINT{json}
) DEFAULT CHARSET=utf8mb4"""
MULTITABLE = [
    "CREATE TABLE golden.orders (id INT PRIMARY KEY, customer INT, amount DECIMAL(10,2), note VARCHAR(50))",
    "CREATE TABLE golden.customers (id INT PRIMARY KEY, name VARCHAR(50), balance DECIMAL(10,2))",
    "CREATE TABLE golden.audit (seq BIGINT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(20))",
]
# The servers' catalogs as the bootstrap read them: tools/capture_golden.py creates the database golden
# with the server's defaults.
SERVER = {
    "mysql": Catalog(databases={"golden": ("utf8mb4", "utf8mb4_0900_ai_ci")}, server_charset="utf8mb4",
                     server_collation="utf8mb4_0900_ai_ci", flavor="mysql"),
    "mariadb": Catalog(databases={"golden": ("latin1", "latin1_swedish_ci")}, server_charset="latin1",
                       server_collation="latin1_swedish_ci", flavor="mariadb"),
}


def golden_catalog(flavor: str, *statements: str) -> Catalog:
    catalog = SERVER[flavor]
    statements = statements or (MATRIX.format(json=", js JSON" if flavor == "mysql" else ""), *MULTITABLE)
    for sql in statements:
        catalog, outcome = apply_ddl(catalog, sql, "golden")
        assert outcome.understood, outcome
    return catalog


def table_maps(name: str) -> list[tuple[str, int, TableMapEvent]]:
    """Every TABLE_MAP, also those inside a TRANSACTION_PAYLOAD_EVENT (at the payload's offset)."""
    out = []
    for f, off, ev in sluice.read_events(DATA / name):
        for inner in (ev, *getattr(ev, "events", ())):
            if isinstance(inner, TableMapEvent):
                out.append((f, off, inner))
    return out


def first_map(name: str) -> tuple[str, int, TableMapEvent]:
    return table_maps(name)[0]


def nameless(tm: TableMapEvent, *, keep_minimal: bool = False) -> TableMapEvent:
    """The map without its optional metadata (NO_LOG), or with only MINIMAL's (no names, no PK)."""
    if keep_minimal:
        columns = tuple(replace(c, name=None, enum_values=None, set_values=None) for c in tm.columns)
    else:
        columns = (ColumnInfo(),) * tm.column_count
    return replace(tm, columns=columns, primary_key=None)


def rows(name: str, plan_for: Any = None) -> list[tuple[str, str, Any]]:
    parser = EventParser(ParserConfig(plan_for=plan_for))
    out = []
    for _, ev in iter_events(str(DATA / name), parser):
        if isinstance(ev, RowsEvent):
            out += [(ev.table.table, ev.kind, r) for r in ev.rows]
    return out


# ------------------------------------------------------------------------------------------ rule 1: FULL maps

@pytest.mark.parametrize("name", ["mysql-matrix.binlog", "mariadb-matrix.binlog"])
def test_full_maps_are_trusted(name: str) -> None:
    tracker = SchemaTracker()
    file, pos, tm = first_map(name)
    resolved = tracker.resolve(tm, file, pos)
    assert resolved.columns == tm.columns
    assert resolved.names[:5] == ("id", "ti", "biu", "fl", "db") and len(resolved.names) == tm.column_count
    assert resolved.primary_key == ("id",)
    assert tracker.version == 0 and tracker.corrections == [] and tracker.catalog.get("golden", "matrix") is None


@pytest.mark.parametrize(("name", "flavor"), [
    ("mysql-matrix.binlog", "mysql"), ("mariadb-matrix.binlog", "mariadb"),
    ("mysql-multitable.binlog", "mysql"), ("mariadb-multitable.binlog", "mariadb"),
    ("mysql-compressed.binlog", "mysql"),
])
def test_full_maps_agree_with_the_schema_replayed_from_ddl(name: str, flavor: str) -> None:
    statements = (("CREATE TABLE golden.comp (id INT PRIMARY KEY, v VARCHAR(200), n INT)",
                   "CREATE TABLE golden.comp2 (id INT PRIMARY KEY, w TEXT)") if "compressed" in name else ())
    catalog = golden_catalog(flavor, *statements)
    tracker = SchemaTracker(catalog, flavor=flavor)
    maps = table_maps(name)
    assert maps
    for file, pos, tm in maps:
        tracked = catalog.get(tm.schema, tm.table)
        assert tracked is not None
        assert check_table_map(tracked, tm, flavor=flavor) is None, tm.table
        tracker.resolve(tm, file, pos)
    assert tracker.corrections == [] and tracker.version == 0


def test_full_map_corrects_a_stale_schema_and_records_it(tmp_path: Path) -> None:
    stale = golden_catalog("mysql", MATRIX.format(json=", js JSON").replace("ti TINYINT", "tiny TINYINT"))
    history = SchemaHistory.open(tmp_path / "schema.jsonl")
    history.record_bootstrap("mysql-matrix.binlog", 4, stale)
    tracker = SchemaTracker(stale, history, flavor="mysql")
    file, pos, tm = first_map("mysql-matrix.binlog")
    resolved = tracker.resolve(tm, file, pos)
    assert resolved.names[1] == "ti"
    assert tracker.version == 1 and len(tracker.corrections) == 1
    fix = tracker.corrections[0]
    assert (fix.file, fix.pos, fix.db, fix.table) == (file, pos, "golden", "matrix")
    assert "tiny" in fix.reason and "ti" in fix.reason
    after = tracker.catalog.get("golden", "matrix")
    assert after is not None and after == fix.after and fix.before.names[1] == "tiny"
    # Same column count and types: the tracked declarations stay, only the name changed.
    assert after.columns == tuple(replace(c, name="ti") if c.name == "tiny" else c for c in fix.before.columns)
    tracker.resolve(tm, file, pos)  # the corrected schema agrees: nothing more to fix
    assert tracker.version == 1 and len(tracker.corrections) == 1
    reopened = SchemaHistory.open(tmp_path / "schema.jsonl")
    assert reopened.catalog_at(file, pos + 1) == tracker.catalog
    assert reopened.catalog_at(file, pos) == stale


def test_full_map_replaces_a_schema_with_another_layout() -> None:
    stale = golden_catalog("mysql", "CREATE TABLE golden.matrix (id int PRIMARY KEY, ti tinyint)")
    tracker = SchemaTracker(stale, flavor="mysql")
    file, pos, tm = first_map("mysql-matrix.binlog")
    tracker.resolve(tm, file, pos)
    derived = tracker.catalog.get("golden", "matrix")
    assert derived is not None and "column names" in tracker.corrections[0].reason
    by_name = {c.name: c for c in derived.columns}
    assert {n: by_name[n].sql_type() for n in ("biu", "d65", "dtm", "c10", "vc", "lat", "bn", "tx", "en", "st",
                                               "b12", "pt", "js")} == {
        "biu": "bigint unsigned", "d65": "decimal(65,30)", "dtm": "datetime(6)", "c10": "char(10) utf8mb4",
        "vc": "varchar(100) utf8mb4", "lat": "varchar(20) latin1", "bn": "binary(4)", "tx": "text utf8mb4",
        "en": "enum('a','bb','ccc') utf8mb4", "st": "set('x','y','z') utf8mb4", "b12": "bit(12)", "pt": "point",
        "js": "json",
    }
    assert derived.primary_key == ("id",) and not by_name["id"].nullable
    assert check_table_map(derived, tm, flavor="mysql") is None
    tracker.resolve(tm, file, pos)
    assert len(tracker.corrections) == 1


# ------------------------------------------------------------------------------------------ rule 2: tracked schema

@pytest.mark.parametrize(("name", "flavor"), [
    ("mariadb-matrix.binlog", "mariadb"), ("mysql-matrix.binlog", "mysql"),
    ("mariadb-multitable.binlog", "mariadb"), ("mysql-multitable.binlog", "mysql"),
])
@pytest.mark.parametrize("keep_minimal", [False, True])
def test_nameless_maps_decode_the_same_rows_as_full_ones(name: str, flavor: str, keep_minimal: bool) -> None:
    tracker = SchemaTracker(golden_catalog(flavor), flavor=flavor)
    resolved_names = []

    def plan_for(tm: TableMapEvent) -> Any:
        bare = nameless(tm, keep_minimal=keep_minimal)
        resolved = tracker.resolve(bare, name, tm.header.log_pos)
        resolved_names.append(resolved.names)
        return rowplan.plan_for(bare, resolved.columns)

    expected = rows(name)
    assert expected
    assert rows(name, plan_for) == expected
    full = {tm.table: tuple(c.name for c in tm.columns) for _, _, tm in table_maps(name)}
    assert set(resolved_names) == set(full.values())


def test_nameless_map_resolves_names_and_primary_key() -> None:
    tracker = SchemaTracker(golden_catalog("mariadb"), flavor="mariadb")
    file, pos, tm = first_map("mariadb-multitable.binlog")
    resolved = tracker.resolve(nameless(tm), file, pos)
    assert resolved.names == ("id", "customer", "amount", "note")
    assert resolved.primary_key == ("id",)
    assert [c.name for c in resolved.columns] == list(resolved.names)
    assert resolved.columns[3].collation == 8  # latin1: MariaDB's server default


def test_metadata_in_the_map_wins_over_the_tracked_facts() -> None:
    # A tracked charset that is wrong but gives the same byte length: the map's MINIMAL charset wins.
    wrong = MATRIX.format(json="").replace("lat VARCHAR(20) CHARACTER SET latin1",
                                           "lat VARCHAR(5) CHARACTER SET utf8mb4")
    tracker = SchemaTracker(golden_catalog("mariadb", wrong), flavor="mariadb")
    file, pos, tm = first_map("mariadb-matrix.binlog")
    resolved = tracker.resolve(nameless(tm, keep_minimal=True), file, pos)
    lat = resolved.names.index("lat")
    assert resolved.columns[lat].collation == 8 and resolved.columns[lat].name == "lat"
    resolved = tracker.resolve(nameless(tm), file, pos)
    assert resolved.columns[lat].collation == 45  # without metadata: what is tracked


@pytest.mark.parametrize(("change", "says"), [
    (("pt POINT", "pt POINT, extra INT"), "the tracked definition has 25 columns, the TABLE_MAP has 24"),
    (("d10 DECIMAL(10,2)", "d10 DECIMAL(10,3)"), "decimal(10,2)"),
    (("vc VARCHAR(100)", "vc VARCHAR(50)"), "holds 200 bytes, but the TABLE_MAP says 400 bytes"),
    (("ti TINYINT", "ti SMALLINT"), "the TABLE_MAP has TINY"),
    (("c10 CHAR(10)", "c10 CHAR(10) CHARACTER SET latin1"), "holds 10 bytes, but the TABLE_MAP says 40 bytes"),
    (("en ENUM('a','bb','ccc')", "en SET('a','bb','ccc')"), "real type SET"),
    (("dtm DATETIME(6)", "dtm DATETIME(3)"), "fractional precision 6"),
    (("tx TEXT", "tx MEDIUMTEXT"), "3-byte length prefix"),
    (("b12 BIT(12)", "b12 BIT(13)"), "bit(12)"),
])
def test_mismatch_is_a_schema_error_saying_where_what_and_how_to_fix(change: tuple[str, str], says: str) -> None:
    sql = MATRIX.format(json="").replace(*change)
    assert sql != MATRIX.format(json="")
    tracker = SchemaTracker(golden_catalog("mariadb", sql), flavor="mariadb")
    file, pos, tm = first_map("mariadb-matrix.binlog")
    with pytest.raises(SchemaError) as info:
        tracker.resolve(nameless(tm), file, pos)
    message = str(info.value)
    for part in ("golden.matrix", f"{file}:{pos}", says, "Tracked definition: golden.matrix (id int,",
                 "the TABLE_MAP has 24 columns of types (LONG, TINY", "delete the schema history file",
                 "binlog_row_metadata=FULL"):
        assert part in message, (part, message)


def test_unknown_table_without_names_is_a_schema_error() -> None:
    tracker = SchemaTracker(SERVER["mariadb"], flavor="mariadb")
    file, pos, tm = first_map("mariadb-matrix.binlog")
    with pytest.raises(SchemaError) as info:
        tracker.resolve(nameless(tm), file, pos)
    message = str(info.value)
    for part in ("does not name the columns of golden.matrix", f"at {file}:{pos}", "binlog_row_metadata=FULL",
                 "CREATE TABLE", "bootstrap"):
        assert part in message, (part, message)


def test_fallback_reads_by_position_with_one_warning_per_table(caplog: pytest.LogCaptureFixture) -> None:
    """Reading archived files, a table the tracker does not know or that does not fit is read by
    position: ``@1``..``@n``, no primary key, unsure values marked; warned about once."""
    file, pos, tm = first_map("mariadb-matrix.binlog")
    tm = nameless(tm)
    stale = MATRIX.format(json="").replace("ti TINYINT", "ti SMALLINT")
    for catalog, says in ((SERVER["mariadb"], "does not name its columns"), (golden_catalog("mariadb", stale),
                                                                              "the TABLE_MAP has TINY")):
        tracker = SchemaTracker(catalog, flavor="mariadb", read_later="dump.sql", positional="fallback")
        caplog.clear()
        for _ in range(2):
            resolved = tracker.resolve(tm, file, pos)
            assert resolved.names == tuple(f"@{i}" for i in range(1, 25)) and resolved.primary_key == ()
            assert all(c.mark_unsure for c in resolved.columns)
        assert [r.getMessage().split(": ")[0] for r in caplog.records] == [f"golden.matrix at {file}:{pos}"]
        assert says in caplog.records[0].getMessage()
        assert tracker.by_position == {("golden", "matrix"): caplog.records[0].getMessage().split(": ", 1)[1]
                                       .rsplit(". Its rows", 1)[0]}
    fits = SchemaTracker(golden_catalog("mariadb"), flavor="mariadb", positional="fallback")
    assert fits.resolve(tm, file, pos).names[:2] == ("id", "ti")
    every = SchemaTracker(golden_catalog("mariadb"), flavor="mariadb", positional="all")
    assert every.resolve(first_map("mariadb-matrix.binlog")[2], file, pos).names[:2] == ("@1", "@2")


# ------------------------------------------------------------------------------------------ QUERY events

def test_on_query(tmp_path: Path) -> None:
    history = SchemaHistory.open(tmp_path / "h.jsonl")
    history.record_bootstrap("b.000001", 4, SERVER["mariadb"])
    tracker = SchemaTracker(SERVER["mariadb"], history, flavor="mariadb")
    assert tracker.on_query("BEGIN", "shop", "b.000001", 10) is None
    assert tracker.on_query("INSERT INTO t VALUES (1)", "shop", "b.000001", 20) is None
    outcome = tracker.on_query("CREATE TABLE t (id int PRIMARY KEY, j json)", "shop", "b.000001", 30, "0-1-5")
    assert outcome is not None and outcome.kind == "create_table" and tracker.version == 1
    t = tracker.catalog.get("shop", "t")
    assert t is not None and t.columns[1].data_type == "longtext"  # MariaDB's JSON
    assert tracker.on_query("CREATE TABLE IF NOT EXISTS t (x int)", "shop", "b.000001", 40) is not None
    assert tracker.version == 1  # nothing changed
    outcome = tracker.on_query("ALTER TABLE t FROBNICATE", "shop", "b.000001", 50)
    assert outcome is not None and not outcome.understood and tracker.version == 1
    assert tracker.unparsed == [("b.000001", 50, "ALTER TABLE t FROBNICATE", outcome.message)]
    assert tracker.catalog.get("shop", "t") == t
    tracker.on_query("ALTER TABLE t ADD n int", "shop", "b.000001", 60)
    assert tracker.version == 2
    at = history.catalog_at("b.000001", 61)
    assert at is not None and at == tracker.catalog
    entry = history.entries[-1]
    assert (entry.sql, entry.gtid, entry.pos) == ("ALTER TABLE t ADD n int", None, 60)
    assert history.entries[1].gtid == "0-1-5"


def test_query_events_of_a_golden_file_are_not_ddl() -> None:
    tracker = SchemaTracker(flavor="mysql")
    queries = [ev for _, _, ev in sluice.read_events(DATA / "mysql-multitable.binlog") if isinstance(ev, QueryEvent)]
    assert queries
    assert all(tracker.on_query(q.sql, q.schema, "f", 0) is None for q in queries)


def test_tracker_takes_the_flavor_into_an_empty_catalog() -> None:
    tracker = SchemaTracker(flavor="mysql")
    assert tracker.catalog.flavor == "mysql" and tracker.flavor == "mysql"
    tracker = SchemaTracker(Catalog(flavor="mariadb"))
    assert tracker.flavor == "mariadb"


def test_the_history_names_each_ddl_by_its_own_transactions_gtid(tmp_path: Path) -> None:
    """A DDL is recorded with the GTID of the transaction it is, never one seen earlier."""
    import struct

    from sluice.binlog.constants import EventType as E
    from sluice.binlog.position import Checkpoint
    from sluice.cdc.capture import CaptureConfig, ChangeCapture
    from tests.unit.binlog.decoders.test_events import SID, event, fde, query_body

    def gtid(gno: int) -> bytes:
        body = b"\x01" + SID.bytes + struct.pack("<Q", gno) + b"\x02" + struct.pack("<QQ", 0, 1)
        return event(E.GTID_LOG_EVENT, body) if gno else event(E.ANONYMOUS_GTID_LOG_EVENT, body)

    history = SchemaHistory.open(tmp_path / "h.jsonl")
    history.record_bootstrap("b.000001", 4, SERVER["mysql"])
    capture = ChangeCapture(CaptureConfig(), Checkpoint("b.000001", 4),
                            SchemaTracker(SERVER["mysql"], history, flavor="mysql"))
    stream = [fde(), gtid(7), event(E.QUERY_EVENT, query_body(b"CREATE TABLE a (id int PRIMARY KEY)", b"")),
              gtid(0), event(E.QUERY_EVENT, query_body(b"CREATE TABLE b (id int PRIMARY KEY)", b"")),
              gtid(9), event(E.QUERY_EVENT, query_body(b"CREATE TABLE c (id int PRIMARY KEY)", b""))]
    pos = 4
    for data in stream:
        capture.feed("b.000001", pos, pos + len(data), data)
        pos += len(data)
    changes = [(e.sql, e.gtid) for e in history.entries if e.kind == "change"]
    assert changes == [("CREATE TABLE a (id int PRIMARY KEY)", f"{SID}:7"),
                       ("CREATE TABLE b (id int PRIMARY KEY)", None),
                       ("CREATE TABLE c (id int PRIMARY KEY)", f"{SID}:9")]
