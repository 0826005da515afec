"""``sluice sandbox up|down|status``: throwaway servers that outlive the command, for trying sluice.

``up`` starts a server (see ``sluice.sandbox.server``) detached from the terminal and records it in
a small JSON state file under ``${XDG_RUNTIME_DIR}/sluice/sandboxes`` (or the cache directory when
there is no runtime directory; ``SLUICE_STATE_DIR`` overrides both). ``down`` and ``status`` read
those files; ``down`` kills the server's process group and removes its directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from sluice.errors import ConfigError, SluiceError
from sluice.processes import pid_alive
from sluice.sandbox.install import cache_dir
from sluice.sandbox.process import stop_process_group
from sluice.sandbox.server import FLAVORS, PASSWORDS, Sandbox


def state_dir() -> Path:
    """Directory of the sandboxes' state files (``SLUICE_STATE_DIR``, runtime dir or cache dir)."""
    if os.environ.get("SLUICE_STATE_DIR"):
        return Path(os.environ["SLUICE_STATE_DIR"])
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "sluice" / "sandboxes"
    return cache_dir() / "sandboxes"


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    return name.strip().lstrip("-"), value


def register(subparsers: Any) -> None:
    """Add ``sluice sandbox up|down|status`` to the command subparsers."""
    parser = subparsers.add_parser(
        "sandbox",
        help="start and stop throwaway MariaDB / MySQL servers with the binlog on",
        description=(
            "Throwaway MariaDB / MySQL servers for trying sluice: binlog on (ROW), GTIDs on, TLS\n"
            "with a generated CA, on a free port of 127.0.0.1, in a temporary directory.\n\n"
            "Users: root / sluice-root (everything), repl / sluice-repl (REPLICATION SLAVE,\n"
            "REPLICATION CLIENT, SELECT) and on MariaDB ed / sluice-ed (ed25519 authentication).\n\n"
            "--flavor mariadb is the system's mariadb-server package; MySQL 9.x (mysql) and\n"
            "MariaDB 11.8 (mariadb11) come from 'python -m sluice.sandbox.install mysql|mariadb11'\n"
            "(all done by './run')."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="sandbox_command", metavar="ACTION", required=True)

    up = sub.add_parser(
        "up", help="start a server in the background and print its DSN",
        description="Start a throwaway server in the background. Prints the root DSN on stdout "
                    "(DSN=$(sluice sandbox up)) and the details on stderr.",
    )
    up.add_argument("--flavor", choices=FLAVORS, default="mariadb", help="which server (default: mariadb)")
    up.add_argument("--port", type=int, help="TCP port on 127.0.0.1 (default: a free one)")
    up.add_argument("--set", dest="settings", metavar="NAME=VALUE", type=_setting, action="append",
                    default=[], help="extra server option --NAME=VALUE, e.g. --set binlog_row_metadata=FULL "
                                     "(repeatable)")
    up.add_argument("--workdir", type=Path,
                    help="directory for data, binlogs and logs (default: a new temporary directory, "
                         "removed by 'down')")
    up.set_defaults(handler=cmd_up)

    down = sub.add_parser("down", help="stop a server started with 'up'",
                          description="Stop the most recently started sandbox, the one on --port, "
                                      "or --all of them, and remove their temporary directories.")
    which = down.add_mutually_exclusive_group()
    which.add_argument("--port", type=int, help="stop the sandbox on this port")
    which.add_argument("--all", action="store_true", help="stop every sandbox started with 'up'")
    down.set_defaults(handler=cmd_down)

    status = sub.add_parser("status", help="list the servers started with 'up'",
                            description="List the sandboxes started with 'up' and whether they run.")
    status.add_argument("--json", action="store_true", help="one JSON object per sandbox")
    status.set_defaults(handler=cmd_status)


def _state_file(port: int) -> Path:
    return state_dir() / f"sandbox-{port}.json"


def _states() -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in state_dir().glob("sandbox-*.json"):
        try:
            found.append((path, json.loads(path.read_text())))
        except (OSError, ValueError):
            continue
    return sorted(found, key=lambda item: float(item[1].get("started_at", 0)))


def _running(state: dict[str, Any]) -> bool:
    pid = int(state.get("pid", 0))
    if pid <= 0 or not pid_alive(pid):
        return False
    try:  # the pid may have been reused by another program since
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return True
    return str(state.get("workdir", "")) in cmdline


def cmd_up(args: argparse.Namespace) -> int:
    """``sluice sandbox up``: start a detached server, record its state file, print its DSN."""
    if args.port is not None and _state_file(args.port).exists() and _running(
            json.loads(_state_file(args.port).read_text())):
        raise ConfigError(f"a sandbox already runs on port {args.port}; stop it with "
                          f"'sluice sandbox down --port {args.port}'")
    owns = args.workdir is None
    sandbox = Sandbox.start(args.flavor, port=args.port, settings=dict(args.settings),
                            workdir=args.workdir, detached=True)
    pid = sandbox.detach()
    state = {
        "flavor": sandbox.flavor, "version": sandbox.version, "host": sandbox.host, "port": sandbox.port,
        "pid": pid, "workdir": str(sandbox.workdir), "owns_workdir": owns, "socket": str(sandbox.socket),
        "ca": str(sandbox.ca_path), "dsn": sandbox.dsn(), "repl_dsn": sandbox.dsn("repl"),
        "client": sandbox.client_argv(), "started_at": time.time(),
    }
    path = _state_file(sandbox.port)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2) + "\n")
    print(sandbox.dsn())
    err = sys.stderr
    print(f"{sandbox.flavor} {sandbox.version} is up on {sandbox.host}:{sandbox.port} (pid {pid})", file=err)
    print(f"  root:     {sandbox.dsn()}", file=err)
    print(f"  replica:  {sandbox.dsn('repl')}   (REPLICATION SLAVE, REPLICATION CLIENT, SELECT)", file=err)
    if sandbox.has_ed25519_user:
        print(f"  ed25519:  {sandbox.dsn('ed')}", file=err)
    print(f"  TLS CA:   {sandbox.ca_path}", file=err)
    print(f"  socket:   {sandbox.socket}   (root password: {PASSWORDS['root']})", file=err)
    print(f"  SQL:      {' '.join(sandbox.client_argv())}", file=err)
    print(f"  data:     {sandbox.workdir}", file=err)
    print(f"stop it with: sluice sandbox down --port {sandbox.port}", file=err)
    return 0


def _stop(path: Path, state: dict[str, Any]) -> None:
    if _running(state):
        stop_process_group(int(state["pid"]))
    if state.get("owns_workdir") and state.get("workdir"):
        shutil.rmtree(state["workdir"], ignore_errors=True)
    path.unlink(missing_ok=True)


def cmd_down(args: argparse.Namespace) -> int:
    """``sluice sandbox down``: stop the last recorded sandbox (or the one on ``--port``, or ``--all``)."""
    states = _states()
    if args.port is not None:
        states = [(p, s) for p, s in states if int(s.get("port", 0)) == args.port]
        if not states:
            print(f"sluice: no sandbox was started on port {args.port} (see 'sluice sandbox status')",
                  file=sys.stderr)
            return 1
    elif not args.all:
        states = states[-1:]
    if not states:
        print("sluice: no sandbox is running", file=sys.stderr)
        return 0
    for path, state in states:
        was_running = _running(state)
        _stop(path, state)
        what = "stopped" if was_running else "was not running; forgot"
        print(f"{state.get('flavor')} sandbox on port {state.get('port')} {what}", file=sys.stderr)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """``sluice sandbox status``: one line (or JSON object) per recorded sandbox, running or not."""
    states = _states()
    if not states and not args.json:
        print("no sandboxes (start one with 'sluice sandbox up')")
    for _path, state in states:
        running = _running(state)
        if args.json:
            print(json.dumps({**state, "running": running}))
            continue
        print(f"{state.get('flavor')} {state.get('version')} port {state.get('port')} pid {state.get('pid')} "
              f"{'running' if running else 'NOT RUNNING'}  {state.get('dsn')}  {state.get('workdir')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m sluice.sandbox.command ACTION ...``: the same as ``sluice sandbox ACTION ...``."""
    parser = argparse.ArgumentParser(prog="sluice")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["sandbox", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.handler(args))
    except SluiceError as exc:
        print(f"sluice: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
