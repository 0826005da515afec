"""The state files of ``sluice sandbox``: one small JSON document per server started with ``up`` or
``replica``, under ``${XDG_RUNTIME_DIR}/sluice/sandboxes`` (or the cache directory when there is no
runtime directory; ``SLUICE_STATE_DIR`` overrides both). A state names the server's flavor,
address, process, directory, DSNs and client command line, and for a replica the port of its
primary; ``peer`` turns a running one back into a ``replication.Peer``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from sluice.errors import ConfigError
from sluice.processes import pid_alive
from sluice.sandbox.clients import run_sql
from sluice.sandbox.install import cache_dir
from sluice.sandbox.replication import Peer

__all__ = ["find", "peer", "record", "running", "state_dir", "state_file", "states"]

State = dict[str, Any]


def state_dir() -> Path:
    """Directory of the sandboxes' state files (``SLUICE_STATE_DIR``, runtime dir or cache dir)."""
    if os.environ.get("SLUICE_STATE_DIR"):
        return Path(os.environ["SLUICE_STATE_DIR"])
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "sluice" / "sandboxes"
    return cache_dir() / "sandboxes"


def state_file(port: int) -> Path:
    """The state file of the sandbox on ``port``."""
    return state_dir() / f"sandbox-{port}.json"


def states() -> list[tuple[Path, State]]:
    """Every recorded sandbox with its file, oldest first."""
    found = []
    for path in state_dir().glob("sandbox-*.json"):
        try:
            found.append((path, json.loads(path.read_text())))
        except (OSError, ValueError):
            continue
    return sorted(found, key=lambda item: float(item[1].get("started_at", 0)))


def running(state: State) -> bool:
    """Whether the recorded server still runs (its pid is alive and still that server's)."""
    pid = int(state.get("pid", 0))
    if pid <= 0 or not pid_alive(pid):
        return False
    try:  # the pid may have been reused by another program since
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return True
    return str(state.get("workdir", "")) in cmdline


def record(box: Any, pid: int, *, owns_workdir: bool, **extra: Any) -> State:
    """Write the state file of a detached ``Sandbox`` running as ``pid``; the state written."""
    state = {
        "flavor": box.flavor, "version": box.version, "host": box.host, "port": box.port,
        "pid": pid, "workdir": str(box.workdir), "owns_workdir": owns_workdir, "socket": str(box.socket),
        "ca": str(box.ca_path), "dsn": box.dsn(), "repl_dsn": box.dsn("repl"),
        "client": box.client_argv(), "started_at": time.time(), **extra,
    }
    path = state_file(box.port)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2) + "\n")
    return state


def find(port: int | None, *, replica: bool | None = None) -> State:
    """The running sandbox on ``port``, else the newest running one (only replicas, or only
    servers that are not, when ``replica`` says); a ``ConfigError`` saying what to do otherwise."""
    live = [s for _, s in states() if running(s)]
    if port is not None:
        live = [s for s in live if int(s.get("port", 0)) == port]
        if not live:
            raise ConfigError(f"no sandbox runs on port {port} (see 'sluice sandbox status')")
        return live[-1]
    if replica is not None:
        live = [s for s in live if ("replica_of" in s) == replica]
    if not live:
        kind = {True: "replica", False: "primary", None: "sandbox"}[replica]
        hint = "'sluice sandbox replica'" if replica else "'sluice sandbox up'"
        raise ConfigError(f"no {kind} sandbox is running: start one with {hint}")
    return live[-1]


def peer(state: State) -> Peer:
    """The ``Peer`` of a running recorded sandbox: SQL through its recorded client command line."""
    who = f"the {state['flavor']} client (socket {state.get('socket')})"

    def sql(statement: str, *, columns: bool = False) -> str:
        return run_sql(list(state["client"]), statement, who=who, columns=columns)

    return Peer(str(state["flavor"]), str(state["host"]), int(state["port"]), Path(state["ca"]), sql)
