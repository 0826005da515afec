"""Columns kept out or hashed through ``sluice run`` on real servers and real Spark: the snapshot (a
keyed table merged chunk by chunk, a key-less table's reads), the stream, an ALTER ADD COLUMN whose
name matches each rule, the mirror's columns and types, the change log, and ``sluice verify``
comparing the masked mirror with the source, by the rules the lake records when given none (a run
with other rules is refused). No raw value of a masked column and not the key is
anywhere in the lake, its checkpoint or what the pipeline said."""

from __future__ import annotations

import argparse
import io
import json
import uuid
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest

from sluice.cdc.column_rules import column_rules, hash_value
from sluice.commands import verify
from sluice.dsn import parse_dsn
from sluice.errors import ConfigError
from sluice.io.connection import Connection
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.verify.check import verify_lake

pytestmark = pytest.mark.spark

KEY = b"lake-key-never-written-5c2e9a1f77"
SECRETS = ("123-45-6789", "987-65-4321", "555-0100", "ada@example.com", "bob@x.org", "ada@home.net")


def _run(server: Any, lake: Path, db: str, rules: Any, said: list[str]) -> None:
    config = PipelineConfig(source=server.dsn("root"), lake=str(lake), tables=rf"{db}\..*", trigger="once",
                            snapshot="initial", columns=rules)
    Pipeline(config, progress=said.append).run(handle_signals=False)


def _verify_args(server: Any, lake: Path, db: str, config: Path, **given: str) -> argparse.Namespace:
    return argparse.Namespace(source=server.dsn("root"), lake=str(lake), tables=rf"{db}\..*", exclude_tables=None,
                              config=str(config), exclude_columns=given.get("exclude_columns"),
                              hash_columns=given.get("hash_columns"))


def _everything_in(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.name.endswith(".parquet"))


def test_run_keeps_columns_out_and_hashes_them_through_snapshot_stream_and_ddl(spark, server, tmp_path):
    db = f"mask_{uuid.uuid4().hex[:8]}"
    lake = tmp_path / "lake"
    rules = column_rules(rf"{db}\.[^.]+\.(ssn|phone)", rf"{db}\.[^.]+\.(email|email2|who)", KEY)
    said: list[str] = []
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.users (id INT PRIMARY KEY, email VARCHAR(80), ssn CHAR(11), age INT)")
        conn.execute(f"CREATE TABLE {db}.seen (who VARCHAR(80), ssn CHAR(11), n INT)")  # no key: reads
        conn.execute(f"INSERT INTO {db}.users VALUES (1, 'ada@example.com', '123-45-6789', 36), (2, NULL, NULL, 5)")
        conn.execute(f"INSERT INTO {db}.seen VALUES ('ada@example.com', '987-65-4321', 1)")
        _run(server, lake, db, rules, said)

        conn.execute(f"INSERT INTO {db}.users VALUES (3, 'bob@x.org', '987-65-4321', 41)")
        conn.execute(f"UPDATE {db}.users SET age = 37 WHERE id = 1")
        conn.execute(f"ALTER TABLE {db}.users ADD COLUMN phone VARCHAR(20)")  # kept out: the mirror is unchanged
        conn.execute(f"UPDATE {db}.users SET phone = '555-0100' WHERE id = 1")
        conn.execute(f"ALTER TABLE {db}.users ADD COLUMN email2 VARCHAR(80)")  # hashed: the table is read again
        conn.execute(f"UPDATE {db}.users SET email2 = 'ada@home.net' WHERE id = 1")
        conn.execute(f"INSERT INTO {db}.seen VALUES ('bob@x.org', NULL, 2)")
        _run(server, lake, db, rules, said)

        mirror = deltalake.DeltaTable(str(lake / db / "users"))
        fields = {f.name: f.type for f in pa.schema(mirror.schema().to_arrow())}
        assert set(fields) == {"id", "email", "age", "email2"}, fields
        assert {str(fields["email"]), str(fields["email2"])} <= {"string", "large_string", "string_view"}
        rows = {r["id"]: r for r in mirror.to_pyarrow_table().to_pylist()}
        h = {s: hash_value(KEY, s) for s in SECRETS}
        assert rows == {
            1: {"id": 1, "email": h["ada@example.com"], "age": 37, "email2": h["ada@home.net"]},
            2: {"id": 2, "email": None, "age": 5, "email2": None},
            3: {"id": 3, "email": h["bob@x.org"], "age": 41, "email2": None},
        }
        log = deltalake.DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table().to_pylist()
        mine = [r for r in log if r["db"] == db and r["op"] != "ddl"]
        images = [json.loads(r[side]) for r in mine for side in ("before", "after") if r[side]]
        assert all("ssn" not in i and "phone" not in i for i in images)
        seen = sorted((i["who"], i["n"]) for r in mine if r["table"] == "seen" for i in [json.loads(r["after"])])
        assert seen == sorted([(h["ada@example.com"], 1), (h["bob@x.org"], 2)])  # the read and the insert alike
        text = json.dumps(mine, default=str) + "\n".join(said)
        assert not [s for s in SECRETS if s in text]
        assert KEY not in _everything_in(tmp_path) and KEY.decode() not in text

        verdicts = verify_lake(parse_dsn(server.dsn("root")), str(lake), tables=lambda d, _t: d == db,
                               columns=rules)
        assert all(v.ok for v in verdicts) and any(v.compared for v in verdicts), verdicts
        other = column_rules(rf"{db}\.[^.]+\.(ssn|phone)", rf"{db}\.[^.]+\.(email|email2|who)",
                             b"another-key-of-16-bytes")
        wrong = verify_lake(parse_dsn(server.dsn("root")), str(lake), tables=lambda d, t: d == db and t == "users",
                            columns=other)
        assert not wrong[0].ok  # a hash under another key is a difference: verify compares the hashes
        config = tmp_path / "sluice.toml"  # sluice verify takes the rules the lake records, with the key
        config.write_text(f'[columns]\nhash_key = "{KEY.decode()}"\n')
        out = io.StringIO()
        assert verify.run(_verify_args(server, lake, db, config), out) == 0, out.getvalue()
        assert f"ok   {db}.users  3 rows" in out.getvalue()
        with pytest.raises(ConfigError, match="other column rules: --exclude-columns none") as mismatch:
            verify.run(_verify_args(server, lake, db, config, hash_columns="x"), out)
        assert "--hash-columns 'x' (the lake's: " in str(mismatch.value) and KEY.decode() not in str(mismatch.value)
        with pytest.raises(ConfigError, match=r"other column rules than this run's: --exclude-columns none"):
            _run(server, lake, db, column_rules(None, rules.hashed.pattern, KEY), said)

        refused = column_rules(rf"{db}\.users\.id", None, None)
        with pytest.raises(ConfigError, match="primary key column id"):
            _run(server, tmp_path / "other", db, refused, said)
        state = tmp_path / "other" / "_sluice" / "snapshot.json"  # refused before anything of the table is kept
        assert not state.exists() or f"{db}.users" not in json.loads(state.read_text())["tables"]
        conn.execute(f"DROP DATABASE {db}")
