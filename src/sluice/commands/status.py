"""``sluice status``: what a lake holds and how fresh it is, read from the lake alone.

It reads, and never writes: the writer's lease (who writes the lake now, since when), the change
log's newest batch and the stream position its commit recorded (with the source server it was read
from), and for every mirror its Delta version, files and bytes, its pending changes and how long
the oldest of them has waited to be MERGEd (``sluice.lake.mirror.pending``), and its last
maintenance (the newest OPTIMIZE and VACUUM in its history).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any, TextIO

from sluice.commands.config_file import lake_settings, read_config
from sluice.errors import ConfigError

__all__ = ["register", "run", "table_status"]

HELP = """\
Show what a lake holds and how fresh it is, without writing to it: who writes it now (the
writer's host, pid and since when), the stream position of the change log's last batch and the
source server it was read from, and one line per table:

  version   the Delta table's version
  files     its active data files, and their bytes
  pending   changes held in its pending table, not yet MERGEd into the mirror
  behind    how long the oldest pending change has waited: a plain reader of the mirror (DuckDB,
            Spark, Polars) does not see it yet. 0 when nothing is pending. sluice verify and
            read_mirror see pending changes; [mirror] max_lag / --mirror-max-lag bound the wait
  upkeep    when it was last compacted and vacuumed

examples:
  sluice status --lake ./lake
  sluice status --lake s3://bucket/lake --config sluice.toml      storage options from the file
  sluice status --lake ./lake --json                              one JSON document
"""


def register(sub: Any) -> None:
    """Add ``sluice status`` and its options to the command subparsers."""
    parser = sub.add_parser("status", help="what a lake holds, and how far each mirror is behind",
                            description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lake", metavar="DIR|URI",
                        help="the lake sluice run writes: a directory or s3://, abfss://, gs:// (or in --config)")
    parser.add_argument("--config", metavar="FILE", help="read 'lake' and its storage options from sluice run's TOML")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.set_defaults(handler=run)


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.0f}h"
    return f"{seconds / 86400:.0f}d"


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _last_upkeep(dt: Any, now: float) -> dict[str, float | None]:
    """Seconds since the table's newest OPTIMIZE and VACUUM, None where its recent history has none."""
    found: dict[str, float | None] = {"compact": None, "vacuum": None}
    for commit in dt.history(200):
        operation = str(commit.get("operation", ""))
        key = "compact" if operation == "OPTIMIZE" else "vacuum" if operation.startswith("VACUUM") else None
        if key is not None and found[key] is None and commit.get("timestamp") is not None:
            found[key] = max(0.0, now - commit["timestamp"] / 1000.0)
    return found


def table_status(lake: Any, table: Any, now: float) -> dict[str, Any]:
    """One table's line: version, files, bytes; for a mirror its pending changes and wait."""
    from deltalake import DeltaTable

    from sluice.lake.mirror.pending import PendingChanges

    out: dict[str, Any] = {"table": table.name, "kind": table.kind}
    try:
        dt = DeltaTable(table.uri, storage_options=lake.delta_options())
        actions = dt.get_add_actions(flatten=True)
        out.update(version=dt.version(), files=actions.num_rows, bytes=sum(actions.column("size_bytes").to_pylist()),
                   upkeep=_last_upkeep(dt, now))
    except Exception as exc:  # a table that cannot be read is a line that says so
        out["error"] = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return out
    if table.kind == "mirror":
        db, name = table.name.split(".", 1)
        pending = PendingChanges(lake, db, name)
        out["pending"] = pending.rows
        out["behind_s"] = 0.0 if pending.oldest is None else round(max(0.0, now - pending.oldest), 1)
    return out


def _stream(lake: Any) -> dict[str, Any]:
    """The change log's last batch: its position and source, and when it committed."""
    from deltalake import DeltaTable

    from sluice.lake.changelog.schema import committed_position

    try:
        log = DeltaTable(lake.changes, storage_options=lake.delta_options())
    except Exception:  # no change log yet: a lake no batch has reached
        return {}
    position = committed_position(log)
    newest = next(iter(log.history(1)), {})
    stamp = newest.get("timestamp")
    return {"position": None if position is None else position.to_json(),
            "position_text": None if position is None else str(position),
            "committed_s_ago": None if not stamp else round(time.time() - stamp / 1000, 1),
            "version": log.version()}


def _writer(lake: Any, now: float) -> dict[str, Any] | None:
    from sluice.lake.lease import current_holder

    holder = current_holder(lake)
    if holder is None:
        return None
    live = not holder.released and now - holder.renewed <= holder.ttl
    return {"host": holder.host, "pid": holder.pid, "since": holder.since, "live": live,
            "renewed_s_ago": round(now - holder.renewed, 1)}


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``sluice status``: the lake's writer, stream position and tables, as a table or JSON."""
    from sluice.lake.layout import open_lake

    out = sys.stdout if out is None else out
    file = read_config(args.config)
    uri, storage = lake_settings(file.get("lake"), args.config)
    uri = args.lake or uri
    if not uri:
        raise ConfigError("sluice status needs --lake (or 'lake = ...' / a [lake] table in --config)")
    lake = open_lake(uri, dict(storage))
    tables = lake.tables()
    if not tables:
        raise ConfigError(f"--lake {lake.uri}: no Delta tables there (is it the directory sluice run writes?)")
    now = time.time()
    lines = [table_status(lake, t, now) for t in tables if t.kind in ("mirror", "history", "changes")]
    report = {"lake": lake.uri, "writer": _writer(lake, now), "stream": _stream(lake), "tables": lines}
    if args.json:
        print(json.dumps(report, indent=1), file=out)
    else:
        _print(report, out)
    return 1 if any("error" in line for line in lines) else 0


def _print(report: dict[str, Any], out: TextIO) -> None:
    writer, stream = report["writer"], report["stream"]
    print(f"lake {report['lake']}", file=out)
    if writer is None:
        print("writer: none has taken the lake", file=out)
    else:
        since = datetime.fromtimestamp(writer["since"], UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        state = "writing now" if writer["live"] else f"not renewed for {_ago(writer['renewed_s_ago'])} (stopped)"
        print(f"writer: host {writer['host']}, pid {writer['pid']}, since {since}: {state}", file=out)
    if stream.get("position_text"):
        print(f"stream: committed up to {stream['position_text']}, "
              f"{_ago(stream['committed_s_ago'])} ago (change log version {stream['version']})", file=out)
    else:
        print("stream: no batch has recorded a position yet", file=out)
    rows = [("table", "version", "files", "bytes", "pending", "behind", "compacted", "vacuumed")]
    for t in report["tables"]:
        if "error" in t:
            rows.append((t["table"], "unreadable:", t["error"][:80], "", "", "", "", ""))
            continue
        upkeep = t["upkeep"]
        rows.append((t["table"], str(t["version"]), str(t["files"]), _size(t["bytes"]),
                     f"{t['pending']:,}" if "pending" in t else "-",
                     _ago(t["behind_s"]) if "behind_s" in t else "-",
                     _ago(upkeep["compact"]), _ago(upkeep["vacuum"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(), file=out)
