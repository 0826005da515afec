"""Mirror layout from the tracked schema and typed row images from JSON (``sluice.lake.types.table_layout``), no server.

The golden binlogs of tests/data were written with ``binlog_row_metadata=FULL``: every TABLE_MAP in
them must equal the map ``table_map_for_schema`` packs from the replayed CREATE TABLE (type codes
and metadata), and give the same mirror columns. Every row change of every file must survive the
trip through its JSON-lines image text: ``decode_image`` gives back the decoded values, so each
column's ``convert`` (and the Arrow table) is the same. Constructed schemas and images cover the
types the golden files lack, the errors and the change-record fields.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sluice
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.events import TableMapEvent
from sluice.binlog.values.geometry import Geometry
from sluice.binlog.values.json_binary import JsonDecimal, JsonDiff, JsonDiffs
from sluice.cdc.jsonl import json_text, json_texts
from sluice.cdc.records import RowChange
from sluice.cdc.schema import Catalog, TableSchema, apply_ddl, check_table_map
from sluice.errors import ProtocolError, SchemaError
from sluice.lake.types.images import decode_image, image_decoder, row_change_from_record
from sluice.lake.types.mirror_columns import MirrorColumn, mirror_columns, to_arrow_table
from sluice.lake.types.table_layout import mirror_columns_for_schema, table_map_for_schema
from tests.conftest import examples

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"

# The DDL of tools/capture_golden.py (the golden files start after it: they hold no CREATE TABLE).
MATRIX = """CREATE TABLE golden.matrix (
    id INT PRIMARY KEY,
    ti TINYINT, biu BIGINT UNSIGNED, fl FLOAT, db DOUBLE,
    d65 DECIMAL(65,30), d10 DECIMAL(10,2), dt DATE, dtm DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2),
    yr YEAR, c10 CHAR(10), vc VARCHAR(100) CHARACTER SET utf8mb4, lat VARCHAR(20) CHARACTER SET latin1,
    bn BINARY(4), vb VARBINARY(20), tx TEXT, bl BLOB, en ENUM('a','bb','ccc'), st SET('x','y','z'),
    b12 BIT(12), b64 BIT(64), pt POINT{json}
) DEFAULT CHARSET=utf8mb4"""
DDL = {
    "matrix": [MATRIX],
    "multitable": [
        "CREATE TABLE golden.orders (id INT PRIMARY KEY, customer INT, amount DECIMAL(10,2), note VARCHAR(50))",
        "CREATE TABLE golden.customers (id INT PRIMARY KEY, name VARCHAR(50), balance DECIMAL(10,2))",
        "CREATE TABLE golden.audit (seq BIGINT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(20))",
    ],
    "compressed": [
        "CREATE TABLE golden.comp (id INT PRIMARY KEY, v VARCHAR(200), n INT)",
        "CREATE TABLE golden.comp2 (id INT PRIMARY KEY, w TEXT)",
    ],
    "partial-json": ["CREATE TABLE golden.docs (id INT PRIMARY KEY, doc JSON, other JSON, n INT)"],
}
SERVER = {
    "mysql": Catalog(databases={"golden": ("utf8mb4", "utf8mb4_0900_ai_ci")}, server_charset="utf8mb4",
                     server_collation="utf8mb4_0900_ai_ci", flavor="mysql"),
    "mariadb": Catalog(databases={"golden": ("latin1", "latin1_swedish_ci")}, server_charset="latin1",
                       server_collation="latin1_swedish_ci", flavor="mariadb"),
    "mariadb11": Catalog(databases={"golden": ("utf8mb4", "utf8mb4_uca1400_ai_ci")}, server_charset="utf8mb4",
                         server_collation="utf8mb4_uca1400_ai_ci", flavor="mariadb"),
}
# The versioned workload creates and alters its tables inside its own file, so no one catalog fits
# all its TABLE_MAPs; the tracker checks each of them against the DDL replayed up to it as ``sluice
# dump`` reads the file (tests/unit/commands/test_golden.py, tests/unit/spark/test_versioned.py).
GOLDEN = sorted(p.name for p in DATA.glob("*.binlog") if not p.name.endswith("-versioned.binlog"))


def replay(flavor: str, *statements: str) -> Catalog:
    catalog = SERVER[flavor]
    for sql in statements:
        catalog, outcome = apply_ddl(catalog, sql, "golden")
        assert outcome.understood, outcome
    return catalog


def golden_catalog(name: str) -> tuple[str, Catalog]:
    """The server family ("mysql", "mariadb") of a golden file and its tables' catalog."""
    server, workload = name.removesuffix(".binlog").split("-", 1)
    statements = [s.format(json=", js JSON" if server == "mysql" else "") for s in DDL[workload]]
    catalog = replay(server, *statements)
    return catalog.flavor or server, catalog


def table_maps(name: str) -> list[TableMapEvent]:
    out = []
    for _f, _p, ev in sluice.read_events(DATA / name):
        for inner in (ev, *getattr(ev, "events", ())):
            if isinstance(inner, TableMapEvent):
                out.append(inner)
    return out


def facts(cols: tuple[MirrorColumn, ...]) -> list[tuple[Any, ...]]:
    return [(c.name, c.mysql_type, c.arrow_type, c.spark_type, c.convert) for c in cols]


def table(sql: str, flavor: str = "mysql") -> TableSchema:
    catalog = replay(flavor, "CREATE DATABASE golden", sql)
    (schema,) = catalog.tables("golden")
    return schema


def same(a: Any, b: Any) -> bool:
    """Equal and of the same type, DECIMALs with the same digits."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Decimal):
        return format(a, "f") == format(b, "f")
    return bool(a == b)


# -- golden TABLE_MAPs: the schema packs into the same map and the same mirror ----------------

def test_every_golden_file_is_covered() -> None:
    assert GOLDEN and all(name.removesuffix(".binlog").split("-", 1)[1] in DDL for name in GOLDEN)


@pytest.mark.parametrize("name", GOLDEN)
def test_schema_packs_into_the_golden_table_maps(name: str) -> None:
    flavor, catalog = golden_catalog(name)
    maps = table_maps(name)
    assert maps
    for tm in maps:
        schema = catalog.get(tm.schema, tm.table)
        assert schema is not None, tm.table
        packed = table_map_for_schema(schema, flavor)
        assert packed.column_count == tm.column_count
        assert packed.column_types == tm.column_types, tm.table
        assert packed.column_meta == tm.column_meta, tm.table
        assert packed.nullable == tm.nullable, tm.table
        assert packed.primary_key == tm.primary_key
        assert tuple(c.name for c in packed.columns) == tuple(c.name for c in tm.columns)
        assert check_table_map(schema, packed, flavor=flavor) is None


@pytest.mark.parametrize("name", GOLDEN)
def test_mirror_columns_for_schema_equal_the_golden_maps(name: str) -> None:
    flavor, catalog = golden_catalog(name)
    for tm in table_maps(name):
        schema = catalog.get(tm.schema, tm.table)
        assert schema is not None
        expected = mirror_columns(tm, tm.columns)
        got = mirror_columns_for_schema(schema, flavor)
        assert facts(got) == facts(expected), tm.table
        assert got == expected


def test_matrix_layout_names_every_type() -> None:
    _, catalog = golden_catalog("mysql-matrix.binlog")
    schema = catalog.get("golden", "matrix")
    assert schema is not None
    types = {c.name: (c.mysql_type, c.spark_type) for c in mirror_columns_for_schema(schema, "mysql")}
    assert types["biu"] == ("bigint unsigned", "decimal(20,0)")
    assert types["d65"] == ("decimal(65,30)", "string")
    assert types["dtm"] == ("datetime(6)", "timestamp_ntz")
    assert types["ts"] == ("timestamp(3)", "timestamp")
    assert types["c10"] == ("char", "string") and types["bn"] == ("binary(4)", "binary")
    assert types["st"] == ("set('x','y','z')", "array<string>")
    assert types["b12"] == ("bit(12)", "bigint") and types["b64"] == ("bit(64)", "decimal(20,0)")
    assert types["pt"] == ("point", "struct<srid:bigint,wkb:binary>")
    assert types["js"] == ("json", "string")


# -- golden rows: the JSON image round trip is lossless for the mirror ------------------------

@pytest.mark.parametrize("name", GOLDEN)
def test_json_images_decode_to_the_decoded_values(name: str) -> None:
    flavor, catalog = golden_catalog(name)
    changes = list(sluice.read_changes(DATA / name))
    assert changes
    layouts: dict[str, tuple[MirrorColumn, ...]] = {}
    images = 0
    for change in changes:
        cols = layouts.get(change.table)
        if cols is None:
            schema = catalog.get(change.db, change.table)
            assert schema is not None
            cols = layouts[change.table] = mirror_columns_for_schema(schema, flavor)
        json_cols = {c.name for c in cols if c.mysql_type == "json"}
        for image in (change.before, change.after):
            if image is None:
                assert decode_image(cols, json_texts([image])[0]) is None
                continue
            (text,) = json_texts([image])
            assert text is not None
            decoded = decode_image(cols, text)
            assert decoded is not None
            assert list(decoded) == list(image)  # same columns in the same order, missing stay missing
            for c in cols:
                if c.name not in image:
                    continue
                orig, back = image[c.name], decoded[c.name]
                assert c.convert(back) == c.convert(orig), (change.table, c.name, orig, back)
                if c.name in json_cols:
                    assert json_text(back) == json_text(orig)
                else:
                    assert same(back, orig), (c.name, orig, back)
            assert to_arrow_table(cols, [decoded]).equals(to_arrow_table(cols, [image]))
            images += 1
    assert images


@pytest.mark.parametrize("name", GOLDEN)
def test_row_change_from_record_rebuilds_the_golden_changes(name: str) -> None:
    flavor, catalog = golden_catalog(name)
    for change in sluice.read_changes(DATA / name):
        schema = catalog.get(change.db, change.table)
        assert schema is not None
        cols = mirror_columns_for_schema(schema, flavor)
        record = change.as_dict()
        record["before"], record["after"] = json_texts([change.before, change.after])
        record["ts"] = datetime.fromtimestamp(change.ts, UTC)
        record["json_diffs"] = json_texts([change.json_diffs or None])[0]
        rebuilt = row_change_from_record(cols, record)
        assert rebuilt == change
        if change.json_diffs:
            assert all(isinstance(d, JsonDiffs) for d in (rebuilt.json_diffs or {}).values())


def test_the_maximum_matrix_row_decodes_to_typed_values() -> None:
    schema = golden_catalog("mysql-matrix.binlog")[1].get("golden", "matrix")
    assert schema is not None
    cols = mirror_columns_for_schema(schema, "mysql")
    (insert,) = (c for c in sluice.read_changes(DATA / "mysql-matrix.binlog") if c.op == "insert" and c.after
                 and c.after["id"] == 3)
    maximum = decode_image(cols, json_texts([insert.after])[0])
    assert maximum is not None
    assert maximum["biu"] == 18446744073709551615
    assert format(maximum["d65"], "f") == "0.000000000000000000000000000001"
    assert maximum["dtm"] == "9999-12-31 23:59:59.999999"
    assert maximum["ts"] == "2038-01-19T03:14:07.999Z"
    assert maximum["bn"] == b"\x00\xff\x00\xff" and maximum["st"] == ("x", "z")
    assert maximum["b64"] == 0xFFFFFFFFFFFFFFFF and maximum["en"] == "ccc"
    assert isinstance(maximum["pt"], Geometry) and maximum["pt"].srid == 0
    assert maximum["js"]["big"] == 18446744073709551615 and maximum["js"]["a"][1] == 2.5


# -- constructed schemas: the types the golden files lack -------------------------------------

def test_types_beyond_the_golden_files() -> None:
    schema = table(
        "CREATE TABLE golden.t (id BIGINT UNSIGNED PRIMARY KEY, d DECIMAL, d38 DECIMAL(38,10), d39 DECIMAL(39,0),"
        " m MEDIUMINT UNSIGNED, s SMALLINT, b1 BIT, c255 CHAR(255) CHARACTER SET utf8mb4, bn BINARY(200),"
        " v VECTOR(3), g GEOMETRY, ls LINESTRING, lt LONGTEXT, mb MEDIUMBLOB, tb TINYBLOB, t0 TIME,"
        " dt DATETIME, ts TIMESTAMP NULL, big SET('a','b','c','d','e','f','g','h','i'))"
    )
    packed = table_map_for_schema(schema, "mysql")
    assert check_table_map(schema, packed, flavor="mysql") is None
    cols = {c.name: c for c in mirror_columns_for_schema(schema, "mysql")}
    assert (cols["d"].mysql_type, cols["d"].spark_type) == ("decimal(10,0)", "decimal(10,0)")
    assert cols["d38"].spark_type == "decimal(38,10)" and cols["d39"].spark_type == "string"
    assert (cols["m"].mysql_type, cols["m"].spark_type) == ("mediumint unsigned", "int")
    assert cols["b1"].mysql_type == "bit(1)"
    assert cols["c255"].mysql_type == "char" and packed.column_meta[7] >> 8 != T.STRING  # 1020 bytes fold
    assert cols["bn"].mysql_type == "binary(200)"
    assert (cols["v"].mysql_type, cols["v"].spark_type) == ("vector(3)", "array<float>")
    assert cols["ls"].mysql_type == "linestring"
    assert cols["lt"].mysql_type == "longtext" and cols["mb"].mysql_type == "mediumblob"
    assert cols["tb"].mysql_type == "tinyblob"
    assert (cols["t0"].mysql_type, cols["dt"].mysql_type, cols["ts"].mysql_type) == ("time", "datetime", "timestamp")
    assert cols["big"].spark_type == "array<string>"


def test_mariadb_json_and_fixed_binary_types() -> None:
    schema = table("CREATE TABLE golden.t (id INT PRIMARY KEY, j JSON, u UUID, i4 INET4, i6 INET6, "
                   "v VECTOR(3))", "mariadb")
    packed = table_map_for_schema(schema, "mariadb")
    assert check_table_map(schema, packed, flavor="mariadb") is None
    types = {c.name: (c.mysql_type, c.spark_type) for c in mirror_columns_for_schema(schema, "mariadb")}
    assert types["j"] == ("longtext", "string")
    # the text the server prints, as the change record has it; the vector's floats
    assert types["u"] == ("uuid", "string") and types["i4"] == ("inet4", "string")
    assert types["i6"] == ("inet6", "string") and types["v"] == ("vector(3)", "array<float>")
    # A JSON column a schema source reports as json is MariaDB's LONGTEXT utf8mb4_bin, text too.
    raw = TableSchema("db", "t", (*schema.columns[:1], type(schema.columns[0])("j", "json")), ("id",))
    (_, j) = mirror_columns_for_schema(raw, "mariadb")
    assert (j.mysql_type, j.spark_type) == ("longtext", "string")
    (_, j) = mirror_columns_for_schema(raw, "mysql")
    assert (j.mysql_type, j.spark_type) == ("json", "string")


def test_the_raw_key_tells_layouts_apart() -> None:
    a = table("CREATE TABLE golden.t (id INT PRIMARY KEY, v VARCHAR(10))")
    b = table("CREATE TABLE golden.t (id INT PRIMARY KEY, v VARCHAR(11))")
    assert table_map_for_schema(a).raw == table_map_for_schema(a).raw
    assert table_map_for_schema(a).raw != table_map_for_schema(b).raw


def test_a_type_without_a_layout_is_a_schema_error() -> None:
    col = type(table("CREATE TABLE golden.t (id INT)").columns[0])
    schema = TableSchema("db", "t", (col("id", "int"), col("x", "hyperloglog")), ("id",))
    with pytest.raises(SchemaError, match=r"`x` of db\.t is declared hyperloglog.*exclude the table"):
        mirror_columns_for_schema(schema)


def test_a_column_without_a_name_is_a_schema_error() -> None:
    col = type(table("CREATE TABLE golden.t (id INT)").columns[0])
    with pytest.raises(SchemaError, match="has no name"):
        mirror_columns_for_schema(TableSchema("db", "t", (col("", "int"),)))


# -- decode_image on constructed images --------------------------------------------------------

COLS = mirror_columns_for_schema(table(
    "CREATE TABLE golden.t (id INT PRIMARY KEY, amount DECIMAL(10,2), f FLOAT, d DOUBLE, bin VARBINARY(8),"
    " tags SET('a','b'), pt POINT, v VECTOR(2), doc JSON, note TEXT, dt DATE, en ENUM('x','y'), b BIT(3))"
))


def test_decode_image_types() -> None:
    image = {"id": 1, "amount": Decimal("-0.10"), "f": 1.5, "d": 1e-300, "bin": b"\x00\xff",
             "tags": ("a", "b"), "pt": Geometry(4326, b"\x01\x01"), "v": (0.5, -2.0),
             "doc": {"n": JsonDecimal("1.50"), "x": 0.1, "big": 2**64 - 1, "e": 1e300,
                     "l": [JsonDecimal("-0.0010"), JsonDecimal("-0.001")]},
             "note": "ünï", "dt": "0000-00-00", "en": "y", "b": 5}
    (text,) = json_texts([image])
    assert text is not None and '"n":1.50' in text
    decoded = decode_image(COLS, text)
    assert decoded is not None
    for name, value in image.items():
        if name != "doc":
            assert same(decoded[name], value), name
    doc = decoded["doc"]
    assert type(doc["n"]) is JsonDecimal and str(doc["n"]) == "1.50"
    assert type(doc["x"]) is float and doc["x"] == 0.1 and doc["e"] == 1e300 and doc["big"] == 2**64 - 1
    # A number whose text is its double's own text is that double: the text, all the mirror keeps, is the same.
    assert type(doc["l"][0]) is JsonDecimal and type(doc["l"][1]) is float
    assert json_text(doc) == json_text(image["doc"])


def test_decode_image_nulls_missing_and_dropped_columns() -> None:
    assert decode_image(COLS, None) is None
    assert decode_image(COLS, "null") is None
    assert decode_image(COLS, '{"id": 1, "amount": null, "gone": "x"}') == {"id": 1, "amount": None}
    assert decode_image(COLS, '{"ID": 2, "Amount": "1.00"}') == {"id": 2, "amount": Decimal("1.00")}
    assert decode_image(COLS, "{}") == {}


def test_decode_image_accepts_any_sequence_and_caches_per_layout() -> None:
    as_list = list(COLS)
    assert decode_image(as_list, '{"amount": "2.50"}') == {"amount": Decimal("2.50")}
    assert image_decoder(COLS) is image_decoder(COLS) is image_decoder(tuple(as_list)) is image_decoder(as_list)
    assert image_decoder(COLS[:2]) is not image_decoder(COLS)


@pytest.mark.parametrize(("text", "error", "says"), [
    ('{"amount": 1.5}', SchemaError, r"'amount' \(decimal\(10,2\)\).*a string with the exact digits"),
    ('{"amount": "ten"}', SchemaError, r"'amount'.*holds 'ten'"),
    ('{"bin": "not base64!"}', SchemaError, r"'bin' \(varbinary\(8\)\).*base64 text"),
    ('{"tags": "a,b"}', SchemaError, r"'tags'.*an array of member strings"),
    ('{"pt": {"srid": 0}}', SchemaError, r"'pt' \(point\).*\{\"srid\": n, \"wkb\""),
    ('{"v": [1, "x"]}', SchemaError, r"'v' \(vector\(2\)\).*an array of numbers"),
    ('{"d": "1.5"}', SchemaError, r"'d' \(double\).*a number.*re-read the table's schema"),
    ('[1, 2]', ProtocolError, "must be a JSON object"),
    ('{"id": 1', ProtocolError, "is not JSON"),
])
def test_decode_image_errors(text: str, error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        decode_image(COLS, text)


# -- row_change_from_record ------------------------------------------------------------------

RECORD = {"op": "update", "db": "golden", "table": "t", "before": '{"id": 7, "amount": "10.50"}',
          "after": '{"id": 7, "amount": "12.00", "bin": "AAE="}', "pk": ["id"], "file": "binlog.000002",
          "pos": 1297, "row": 0, "gtid": "3d687a2c-b38e-11ed-91ef-3f952e283fc3:283", "ts": 1711727631}


def test_row_change_from_record() -> None:
    change = row_change_from_record(COLS, RECORD)
    assert change == RowChange("update", "golden", "t", {"id": 7, "amount": Decimal("10.50")},
                               {"id": 7, "amount": Decimal("12.00"), "bin": b"\x00\x01"}, ("id",),
                               "binlog.000002", 1297, 0, "3d687a2c-b38e-11ed-91ef-3f952e283fc3:283", 1711727631)
    assert str(change.after["amount"]) == "12.00"  # type: ignore[index]


@pytest.mark.parametrize("ts", [
    1711727631,
    datetime.fromtimestamp(1711727631, UTC),
    datetime.fromtimestamp(1711727631, timezone(timedelta(hours=-5))),
    datetime.fromtimestamp(1711727631),  # naive local time, as pyspark collects a timestamp
])
def test_record_ts_forms(ts: Any) -> None:
    assert row_change_from_record(COLS, {**RECORD, "ts": ts}).ts == 1711727631


def test_record_as_a_pyspark_row_and_with_json_diffs() -> None:
    from pyspark.sql import Row

    diffs = '{"doc": [{"op": "replace", "path": "$.a", "value": 1.50}, {"op": "remove", "path": "$.b"}]}'
    change = row_change_from_record(COLS, Row(**{**RECORD, "json_diffs": diffs}))  # type: ignore[arg-type]
    assert change.json_diffs == {"doc": JsonDiffs((JsonDiff("replace", "$.a", JsonDecimal("1.50")),
                                                   JsonDiff("remove", "$.b")))}
    assert str(change.json_diffs["doc"][0].value) == "1.50"
    insert = row_change_from_record(COLS, Row(**{**RECORD, "op": "insert", "before": None}))  # type: ignore[arg-type]
    assert insert.before is None and insert.json_diffs is None


@pytest.mark.parametrize(("change", "error", "says"), [
    ({"op": "ddl"}, ProtocolError, r"golden\.t at binlog\.000002:1297 row 0 has op 'ddl'"),
    ({"ts": "yesterday"}, ProtocolError, "ts must be a datetime"),
    ({"pk": "id"}, ProtocolError, "pk must be a list of column names"),
    ({"after": '{"amount": 12}'}, SchemaError, r"change record of golden\.t at binlog\.000002:1297 row 0: .*'amount'"),
    ({"before": "{"}, ProtocolError, r"golden\.t at binlog\.000002:1297 row 0: a row image is not JSON"),
])
def test_record_errors(change: dict[str, Any], error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        row_change_from_record(COLS, {**RECORD, **change})


def test_record_without_a_field() -> None:
    record = dict(RECORD)
    del record["file"]
    with pytest.raises(ProtocolError, match="no field 'file'"):
        row_change_from_record(COLS, record)


# -- property: numbers survive the image text --------------------------------------------------

@st.composite
def decimals(draw: st.DrawFn) -> tuple[int, int, Decimal]:
    precision = draw(st.integers(1, 65))
    scale = draw(st.integers(0, min(30, precision)))
    digits = draw(st.integers(0, 10**precision - 1))
    sign = draw(st.sampled_from(["", "-"]))
    return precision, scale, Decimal(f"{sign}{digits}E-{scale}")


@settings(max_examples=examples(300), deadline=None)
@given(
    dec=decimals(),
    signed=st.integers(-(2**63), 2**63 - 1),
    unsigned=st.integers(0, 2**64 - 1),
    f32=st.floats(width=32, allow_nan=False, allow_infinity=False),
    f64=st.floats(allow_nan=False, allow_infinity=False),
    doc_decimal=st.decimals(allow_nan=False, allow_infinity=False, places=6),
)
def test_numbers_survive_the_image_text(dec: tuple[int, int, Decimal], signed: int, unsigned: int, f32: float,
                                        f64: float, doc_decimal: Decimal) -> None:
    precision, scale, value = dec
    cols = mirror_columns_for_schema(table(
        f"CREATE TABLE golden.t (d DECIMAL({precision},{scale}), s BIGINT, u BIGINT UNSIGNED, f FLOAT, g DOUBLE,"
        " j JSON)"
    ))
    doc = [JsonDecimal(doc_decimal), f64, signed, {"u": unsigned}]
    image = {"d": value, "s": signed, "u": unsigned, "f": f32, "g": f64, "j": doc}
    decoded = decode_image(cols, json_texts([image])[0])
    assert decoded is not None
    for name in ("d", "s", "u", "f", "g"):
        assert same(decoded[name], image[name]), name
    assert json_text(decoded["j"]) == json_text(doc)
    assert json.loads(json_text(decoded["j"]) or "") == json.loads(json_text(doc) or "")
    for c in cols:
        assert c.convert(decoded[c.name]) == c.convert(image[c.name])
