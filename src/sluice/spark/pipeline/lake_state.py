"""Where the stream stands, as the lake and Spark's checkpoint say: the pipeline's id, the Delta app
id of the stream's batches, the schema history's file, and the position a stream without a
checkpoint goes on from.

- ``_sluice/pipeline.json`` names the pipeline (created once, only if absent).
- ``_sluice/capture.json`` holds the run's table filter (``--tables`` / ``--exclude-tables``), so that
  ``sluice verify`` knows which source tables must have a mirror; each run writes its own. It also
  holds the column rules the lake is written with (``--exclude-columns`` / ``--hash-columns``,
  ``sluice.cdc.column_rules.rules_record``): once the lake holds a mirror or its change log, a run
  with other rules is refused, since its rows would sit beside rows written under the old ones.
  It holds the run's ``--route``s too, which ``sluice snapshot`` and ``sluice verify`` follow; a
  run with other routes than the lake's mirrors were written by is refused. And it holds the
  ``--history`` regex of the runs that stream: once the lake keeps a table's history, a streaming
  run with another regex is refused (a table it adds would start its history in the middle of the
  stream, one it leaves out would miss changes); a run that only snapshots writes no history and
  keeps the lake's.
- Spark numbers batches per checkpoint, so a new checkpoint on a lake that already holds batches
  gets an app id of its own (the pipeline id and a suffix), kept in the checkpoint folder
  (``APP_MARKER``); a checkpoint of a version before that marker keeps the pipeline id.
- Every change-log commit records the stream offset its batch ends at
  (``sluice.lake.sink.committed_position``): a checkpoint with no offset goes on from there.
  A lake written before commits recorded it, whose stream committed batches, cannot say where its
  stream stands without Spark's checkpoint: ``unknown_position`` then names the newest change the
  change log holds, and the pipeline refuses to guess (``sluice.spark.pipeline.runner``).
- The source writes the schema history to a file. For a lake on a file system that file is in the
  lake; for one on an object store it lives beside the checkpoint and is copied into the lake, whole,
  before each commit (``save_history``), and back when the checkpoint is new (``load_history``).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

from sluice.binlog.position import Checkpoint, position_key
from sluice.cdc.column_rules import rules_difference, rules_record
from sluice.errors import ConfigError
from sluice.io.atomic import write_atomically
from sluice.lake.changelog.schema import committed_position
from sluice.lake.layout import Lake
from sluice.lake.sink import DeltaLake

__all__ = ["APP_MARKER", "LakeState", "drop_unfinished_writes"]

APP_MARKER = "sluice-app.json"  # in Spark's checkpoint folder: the app id of the stream's batches


class LakeState:
    """The lake's and the checkpoint's account of a pipeline (module docstring)."""

    def __init__(self, store: Lake, checkpoint_path: Path, source: str,
                 capture: tuple[str | None, str | None] = (None, None), columns: Any = None,
                 routes: Any = None, history: tuple[str | None, bool] = (None, True)) -> None:
        self.store = store
        self.checkpoint_path = checkpoint_path
        self._source = source  # the source DSN, redacted: recorded in pipeline.json
        if store.remote:
            store.check_conditional_writes()
            self.history_path = checkpoint_path.parent / f"{checkpoint_path.name}.schema-history.jsonl"
        else:
            folder = Path(store.own)
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError):
                raise ConfigError(f"--lake {store.uri} is not a directory: give a directory (it is created if "
                                  "missing)") from None
            except PermissionError:
                raise ConfigError(f"--lake {store.uri}: permission denied creating {folder}") from None
            self.history_path = Path(store.join(store.HISTORY))
        self._history_saved = -1  # bytes of the schema history in the lake
        self._history_seen = -1  # the source's file's size when it was last copied
        self.pipeline_id = self._pipeline_id()
        self._record_capture(*capture, columns, routes.texts if routes is not None else [], history)  # routes: Routes
        self._had_offsets = _has_offsets(checkpoint_path)
        # The change log, read once, only for a checkpoint that has no offset yet.
        log = None if self._had_offsets else DeltaLake(store, self.pipeline_id).table(store.changes)
        self.app_id = self._stream_app_id(new_on_a_used_lake=log is not None)
        self.resume_at: Checkpoint | None = None if log is None else committed_position(log)
        self.unknown_position: tuple[int, str, int] | None = None
        batch = None if log is None or self.resume_at is not None else log.transaction_version(self.pipeline_id)
        if batch is not None and log is not None:
            self.unknown_position = (batch, *_newest_change(log))

    def _pipeline_id(self) -> str:
        store = self.store
        doc = store.get_json(store.PIPELINE)
        if doc is not None:
            try:
                return str(doc["id"])
            except (TypeError, KeyError) as exc:
                raise ConfigError(f"{store.join(store.PIPELINE)} is damaged ({exc}); start the lake over") from None
        pid = f"sluice-{uuid.uuid4().hex[:12]}"
        if not store.create(store.PIPELINE, json.dumps({"id": pid, "source": self._source})
                            .encode("utf-8")):
            return self._pipeline_id()  # another run made it first
        return pid

    def _record_capture(self, tables: str | None, exclude_tables: str | None, columns: Any,
                        routes: list[str], history: tuple[str | None, bool]) -> None:
        """Record the run's table filter, column rules (``columns``, its ``ColumnRules`` or None),
        routes and ``--history`` regex in the lake (``capture.json``) when they are not there
        already; rules other than those of a lake already written are a ``ConfigError``, and so are
        routes other than those its mirrors were written by (a mirror would mix two layouts) and,
        for a run that streams (``history``: the regex and whether the run streams), another
        ``--history`` than the one the lake's histories were kept by."""
        store = self.store
        doc: dict[str, Any] = {"tables": tables, "exclude_tables": exclude_tables, "columns": rules_record(columns)}
        if routes:
            doc["routes"] = routes
        found = store.get_json(store.CAPTURE)
        kept = _check_history(store, found, *history)
        if kept is not None:
            doc["history"] = kept
        if found == doc:
            return
        lake_rules = found.get("columns") if isinstance(found, dict) else None
        differ = rules_difference(lake_rules, columns) if isinstance(lake_rules, dict) else None
        if differ and (store.is_delta(store.changes) or store.mirrors()):
            raise ConfigError(
                f"the lake {store.uri} is written with other column rules than this run's: {differ}. Rows under "
                "both would sit side by side in its mirrors and change log: give the options and key its runs were "
                "given, or write to a new lake")
        before = found.get("routes", []) if isinstance(found, dict) else []
        if before != routes and store.mirrors():
            def said(texts: list[str]) -> str:
                return " ".join(f"--route '{t}'" for t in texts) or "no --route"

            raise ConfigError(
                f"the lake {store.uri} was written with {said(before)}, this run has {said(routes)}: its mirrors "
                "would mix both. Give the lake's routes, or start a new lake")
        store.put_json(store.CAPTURE, doc)

    def _stream_app_id(self, *, new_on_a_used_lake: bool) -> str:
        """The Delta app id of the stream's batches: Spark numbers batches per checkpoint, so a new
        checkpoint on a lake that already holds batches gets an app id of its own (the pipeline id and
        a suffix, kept in the checkpoint folder), and its batch 0 is not taken for the old batch 0."""
        marker = self.checkpoint_path / APP_MARKER
        try:
            return str(json.loads(marker.read_text())["app_id"])
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{marker} is damaged ({exc}); delete it with the checkpoint: the stream goes on "
                              "from the lake's last batch") from None
        app_id = f"{self.pipeline_id}.{uuid.uuid4().hex[:8]}" if new_on_a_used_lake else self.pipeline_id
        self.checkpoint_path.mkdir(parents=True, exist_ok=True)
        write_atomically(marker, json.dumps({"app_id": app_id}).encode("utf-8"), what="the stream's app id")
        return app_id

    def new_checkpoint(self) -> str:
        """Start Spark's checkpoint over, when the stream no longer goes on from its offsets (a new
        snapshot replaced a purged position): the folder removed, the stream's batches under a new
        app id (its batch 0 is not the old batch 0); that app id."""
        shutil.rmtree(self.checkpoint_path, ignore_errors=True)
        self._had_offsets = False
        self.resume_at = None
        self.unknown_position = None
        self.app_id = self._stream_app_id(new_on_a_used_lake=True)
        return self.app_id

    def streamed(self) -> bool:
        """Whether the stream ran before: Spark's checkpoint or the lake knows where it stands."""
        return self._had_offsets or self.resume_at is not None or self.unknown_position is not None

    def load_history(self) -> None:
        """A lake on an object store: its schema history becomes the source's file when the file is
        missing or behind (a new checkpoint, or another machine)."""
        if not self.store.remote:
            return
        found = self.store.get(self.store.HISTORY)
        have = self.history_path.stat().st_size if self.history_path.exists() else 0
        if found is not None and len(found) > have:
            self.history_path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.history_path, found, what="the schema history")
        self._history_saved = len(found) if found is not None else -1

    def save_history(self) -> None:
        """A lake on an object store: the source's schema history, whole, into the lake, when it grew."""
        if not self.store.remote or not self.history_path.exists():
            return
        size = self.history_path.stat().st_size
        if size == self._history_seen:  # the file is read only when the source wrote to it
            return
        self._history_seen = size
        data = self.history_path.read_bytes()
        data = data[:data.rfind(b"\n") + 1]  # whole entries: the source may be writing the next one
        if len(data) != self._history_saved:
            self.store.put(self.store.HISTORY, data)
            self._history_saved = len(data)


def _newest_change(log: Any) -> tuple[str, int]:
    """The binlog position of the newest change the change log holds (``("", 0)``: none)."""
    rows = log.to_pyarrow_table(columns=["file", "pos"]).to_pylist()
    found = [(r["file"], r["pos"]) for r in rows if r["file"]]
    return max(found, key=lambda fp: position_key(*fp)) if found else ("", 0)


def _has_offsets(checkpoint: Path) -> bool:
    """Whether Spark's checkpoint records a batch (its offset log has an entry)."""
    offsets = checkpoint / "offsets"
    return offsets.is_dir() and any(p.name.isdigit() for p in offsets.iterdir())


def _check_history(store: Lake, found: Any, history: str | None, streams: bool) -> str | None:
    """The ``--history`` regex ``capture.json`` keeps: the run's when it streams, else the lake's;
    another than the lake's, once the lake keeps a history, is a ``ConfigError``."""
    recorded = found.get("history") if isinstance(found, dict) else None
    if not streams:
        return recorded
    if isinstance(found, dict) and "history" in found and recorded != history and store.histories():
        def said(text: str | None) -> str:
            return "no --history" if text is None else f"--history {text!r}"

        raise ConfigError(
            f"the lake {store.uri} keeps the histories of {said(recorded)}, this run has {said(history)}: a table "
            "it adds would start its history in the middle of the stream, one it leaves out would miss changes. "
            "Give the lake's --history, or keep other histories in a new lake")
    return history


def drop_unfinished_writes(checkpoint: Path) -> None:
    """Remove the temp files of checkpoint writes a kill cut short. Spark writes each checkpoint file
    as a hidden ``.NAME.UUID.tmp`` and renames it; one left behind before the first offsets landed
    makes Spark 4 refuse the checkpoint for good ("offsets should be empty on batch 0")."""
    if checkpoint.is_dir():
        for path in checkpoint.rglob(".*.tmp*"):
            if path.is_file() and (path.name.endswith(".tmp") or path.name.endswith(".tmp.crc")):
                path.unlink(missing_ok=True)
