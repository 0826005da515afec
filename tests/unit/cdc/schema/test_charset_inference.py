"""Character sets of columns that declare none, offline: learned from what the binlog carries.

Binlog files are built here event by event, as MariaDB writes them with ``binlog_row_metadata``
NO_LOG (the TABLE_MAP names no character set): a CREATE DATABASE and a CREATE TABLE whose QUERY
events carry the session's ``collation_server`` (``Q_CHARSET_CODE``) and, as MariaDB 11.2+ writes
it, ``character_set_collations`` (status variable 131), then one inserted row. A column whose
character set sluice cannot know is never printed in a guessed character set: reading changes stops
with the column named, and ``sluice dump`` (archived files) prints its values marked, with a warning.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import sluice
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.constants import EventType as E
from sluice.cdc.schema import Catalog, SchemaTracker, SessionCharsets
from sluice.errors import SchemaError
from tests.unit.binlog.decoders.test_events import event, fde, query_body, table_map_body
from tests.unit.binlog.decoders.test_events_rows import rows_v1
from tests.unit.binlog.encoders import image, prefixed

pytestmark = pytest.mark.unit

TEXT = "café ✓ 日本"
TID = 42
UTF8MB4_GENERAL_CI, UCA1400_AI_CI, LATIN1_SWEDISH_CI = 45, 2304, 8


def status(collation_server: int, collations: tuple[tuple[int, int], ...] = ()) -> bytes:
    """Q_CHARSET_CODE (client charset, collation_connection, collation_server), then 131 if given."""
    out = b"\x04" + struct.pack("<HHH", 33, 33, collation_server)
    if collations:
        out += b"\x83" + bytes([len(collations)]) + b"".join(struct.pack("<HH", a, b) for a, b in collations)
    return out


def binlog(tmp_path: Path, *, server: int, collations: tuple[tuple[int, int], ...] = (),
           create_database: str | None = "CREATE DATABASE d", columns: str = "v VARCHAR(20), tx TEXT",
           varchar_bytes: int = 80, encoding: str = "utf-8", text: str = TEXT) -> Path:
    """A MariaDB binlog file: the DDL, then one transaction inserting (1, text, text)."""
    st = status(server, collations)
    ddl = [create_database] if create_database else []
    ddl.append(f"CREATE TABLE t (id INT PRIMARY KEY, {columns})")
    events = [fde("10.11.6-MariaDB-log")]
    events += [event(E.QUERY_EVENT, query_body(sql.encode(), st, b"d")) for sql in ddl]
    events.append(event(E.QUERY_EVENT, query_body(b"BEGIN", st, b"d")))
    meta = struct.pack("<HB", varchar_bytes, 2)  # VARCHAR: max bytes (u16); TEXT: length-prefix width
    events.append(event(E.TABLE_MAP_EVENT, table_map_body(TID, b"d", b"t", [T.LONG, T.VARCHAR, T.BLOB], meta,
                                                          b"\x06")))
    value = text.encode(encoding)
    row = image([struct.pack("<i", 1), prefixed(value, 1 if varchar_bytes < 256 else 2), prefixed(value, 2)])
    events.append(event(E.WRITE_ROWS_EVENT_V1, rows_v1(TID, 3, b"\x07", row)))
    events.append(event(E.XID_EVENT, struct.pack("<Q", 7)))
    path = tmp_path / "mariadb-bin.000001"
    path.write_bytes(b"\xfebin" + b"".join(events))
    return path


def after(path: Path) -> dict[str, object]:
    changes = list(sluice.read_changes(path))
    assert len(changes) == 1
    assert changes[0].after is not None
    return dict(changes[0].after)


def test_utf8mb4_server_as_10_11_configured_for_it(tmp_path: Path) -> None:
    # character_set_server=utf8mb4 on 10.11: the database and so the columns are utf8mb4
    assert after(binlog(tmp_path, server=UTF8MB4_GENERAL_CI)) == {"id": 1, "v": TEXT, "tx": TEXT}


def test_uca1400_server_as_11_8_writes_it(tmp_path: Path) -> None:
    # 11.8's defaults: collation_server 2304 (utf8mb4_uca1400_ai_ci), and utf8mb4's default collation
    # in character_set_collations
    path = binlog(tmp_path, server=UCA1400_AI_CI, collations=((UTF8MB4_GENERAL_CI, UCA1400_AI_CI),))
    assert after(path) == {"id": 1, "v": TEXT, "tx": TEXT}


def test_latin1_server(tmp_path: Path) -> None:
    # the server's latin1 is cp1252: 0x80 is the euro sign
    path = binlog(tmp_path, server=LATIN1_SWEDISH_CI, varchar_bytes=20, encoding="cp1252", text="café €")
    assert after(path) == {"id": 1, "v": "café €", "tx": "café €"}


def test_database_created_before_the_binlog_is_an_error_naming_the_columns(tmp_path: Path) -> None:
    path = binlog(tmp_path, server=UTF8MB4_GENERAL_CI, create_database=None)
    with pytest.raises(SchemaError) as err:
        list(sluice.read_changes(path))
    text = str(err.value)
    assert "d.t" in text and "`v`, `tx`" in text
    assert "CREATE DATABASE" in text and "binlog_row_metadata=FULL" in text


def test_dump_marks_those_values_and_says_so(tmp_path: Path) -> None:
    # sluice dump reads archived files: the values are printed as their bytes, marked, never as text
    path = binlog(tmp_path, server=UTF8MB4_GENERAL_CI, create_database=None)
    run = subprocess.run([sys.executable, "-m", "sluice.cli", "dump", str(path)], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0, run.stderr
    (line,) = run.stdout.splitlines()
    record = json.loads(line)
    marked = {"hex": TEXT.encode().hex()}
    assert record["after"] == {"id": 1, "v": marked, "tx": marked} and record["pk"] == ["id"]
    assert "`v`, `tx`" in run.stderr and "CREATE DATABASE" in run.stderr


def test_declared_character_sets_need_no_database_default(tmp_path: Path) -> None:
    columns = "v VARCHAR(20) CHARACTER SET utf8mb4, tx TEXT COLLATE utf8mb4_bin"
    path = binlog(tmp_path, server=LATIN1_SWEDISH_CI, create_database=None, columns=columns)
    assert after(path) == {"id": 1, "v": TEXT, "tx": TEXT}


def test_database_declared_character_set_wins_over_the_server(tmp_path: Path) -> None:
    path = binlog(tmp_path, server=LATIN1_SWEDISH_CI, create_database="CREATE DATABASE d CHARACTER SET utf8mb4")
    assert after(path) == {"id": 1, "v": TEXT, "tx": TEXT}


def test_session_charsets_set_the_server_defaults_ddl_replays_with() -> None:
    session = SessionCharsets(UCA1400_AI_CI, ((UTF8MB4_GENERAL_CI, UCA1400_AI_CI),))
    tracker = SchemaTracker(flavor="mariadb")
    tracker.on_query("CREATE DATABASE d", "", "f", 4, session=session)
    tracker.on_query("CREATE TABLE d.t (v VARCHAR(5), w VARCHAR(5) CHARACTER SET utf8mb4)", "", "f", 9,
                     session=session)
    table = tracker.catalog.get("d", "t")
    assert table is not None
    assert [(c.charset, c.collation) for c in table.columns] == [("utf8mb4", "utf8mb4_uca1400_ai_ci")] * 2
    assert tracker.catalog.database_defaults() == {"d": ("utf8mb4", "utf8mb4_uca1400_ai_ci")}


def test_session_without_news_keeps_the_catalog() -> None:
    catalog = Catalog(server_charset="latin1", server_collation="latin1_swedish_ci", flavor="mariadb")
    assert SessionCharsets(LATIN1_SWEDISH_CI).applied(catalog) is catalog
    # an id sluice has no name for keeps the collation of the same character set
    utf8 = Catalog(server_charset="utf8mb4", server_collation="utf8mb4_bin", flavor="mariadb")
    assert SessionCharsets(2305).applied(utf8) is utf8


def test_no_server_charset_logged_leaves_the_database_default_unknown() -> None:
    tracker = SchemaTracker(flavor="mariadb")
    tracker.on_query("CREATE DATABASE d", "", "f", 4)
    tracker.on_query("CREATE TABLE d.t (v VARCHAR(5))", "", "f", 9)
    table = tracker.catalog.get("d", "t")
    assert table is not None and table.columns[0].charset is None
