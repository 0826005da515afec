"""``sluice sandbox up|replica|promote|down|status``: throwaway servers that outlive the command, for
trying sluice.

``up`` starts a server (see ``sluice.sandbox.server``) detached from the terminal and records it in
a small JSON state file (``sluice.sandbox.state``); ``replica`` and ``promote`` (handled in
``replica_command``) start a replica of a running sandbox and make one a primary. ``down`` and
``status`` read those files; ``down`` kills the server's process group and removes its directory.
This module holds the options of every action and the handlers of ``up``, ``down`` and ``status``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from sluice.errors import SluiceError
from sluice.sandbox import start_command
from sluice.sandbox.process import stop_process_group
from sluice.sandbox.server import FLAVORS
from sluice.sandbox.state import running, states


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    return name.strip().lstrip("-"), value


def _server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, help="TCP port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--set", dest="settings", metavar="NAME=VALUE", type=_setting, action="append",
                        default=[], help="extra server option --NAME=VALUE, e.g. --set binlog_row_metadata=FULL "
                                         "(repeatable)")
    parser.add_argument("--workdir", type=Path,
                        help="directory for data, binlogs and logs (default: a new temporary directory, "
                             "removed by 'down')")


def register(subparsers: Any) -> None:
    """Add ``sluice sandbox up|replica|promote|down|status`` to the command subparsers."""
    parser = subparsers.add_parser(
        "sandbox",
        help="start and stop throwaway MariaDB / MySQL servers with the binlog on",
        description=(
            "Throwaway MariaDB / MySQL servers for trying sluice: binlog on (ROW), GTIDs on, TLS\n"
            "with a generated CA, on a free port of 127.0.0.1, in a temporary directory.\n\n"
            "'replica' starts a replica of one and 'promote' makes it the primary, to try a failover.\n\n"
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
    _server_options(up)
    up.set_defaults(handler=start_command.cmd_up)

    replica = sub.add_parser(
        "replica", help="start a replica of a running sandbox and print its DSN",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Start a replica of a running sandbox (the newest one that is not a replica, or --of PORT)\n"
            "in the background: the same flavor, its own binlog and server_id (its port), replicating\n"
            "as repl over TLS from the primary's first transaction, read-only until promoted. Prints\n"
            "its root DSN on stdout once it has caught up, and the details on stderr.\n\n"
            "With GTIDs (the default) it follows by GTID: MySQL SOURCE_AUTO_POSITION=1 (gtid_mode=ON),\n"
            "MariaDB MASTER_USE_GTID=slave_pos. --gtids off follows the binlog's files and offsets\n"
            "instead; on MySQL the primary then runs without GTIDs too:\n"
            "  sluice sandbox up --flavor mysql --set gtid-mode=OFF --set enforce-gtid-consistency=OFF\n"
            "--log-replica-updates off (MariaDB: log_slave_updates) leaves what it applies out of its\n"
            "own binlog, so that after a failover the new primary's binlog lacks it.\n\n"
            "Try a failover:\n"
            "  P=$(sluice sandbox up --flavor mysql); R=$(sluice sandbox replica)\n"
            "  sluice run --source \"$P\" --lake ./lake        # write to the primary, then Ctrl-C\n"
            "  sluice sandbox down --port PRIMARY_PORT        # the primary is gone\n"
            "  sluice sandbox promote                         # the replica takes writes\n"
            "  sluice run --source \"$R\" --lake ./lake        # goes on by GTID: 'source changed: ...'"
        ),
    )
    replica.add_argument("--of", type=int, metavar="PORT",
                         help="the primary's port (default: the newest running sandbox that is not a replica)")
    replica.add_argument("--gtids", choices=("on", "off"), default="on",
                         help="follow by GTID (default) or by binlog file and offset")
    replica.add_argument("--log-replica-updates", choices=("on", "off"), default="on",
                         help="write what it applies to its own binlog (default: on), as a replica that "
                              "may become a source must")
    replica.add_argument("--writable", action="store_true",
                         help="leave it writable (default: read_only, and super_read_only on MySQL)")
    _server_options(replica)
    replica.set_defaults(handler=start_command.cmd_replica)

    promote = sub.add_parser(
        "promote", help="make a sandbox replica the primary, as a failover does",
        description="Make a replica started with 'replica' (the newest one, or --port PORT) a primary: "
                    "its receiver stops, what it received is applied, replication stops and is forgotten "
                    "(RESET REPLICA ALL), and it takes writes (read_only and super_read_only OFF). "
                    "Stop the old primary first ('down --port'), as a failover would.",
    )
    promote.add_argument("--port", type=int, help="the replica's port (default: the newest running replica)")
    promote.set_defaults(handler=start_command.cmd_promote)

    down = sub.add_parser("down", help="stop a server started with 'up' or 'replica'",
                          description="Stop the most recently started sandbox, the one on --port, "
                                      "or --all of them, and remove their temporary directories.")
    which = down.add_mutually_exclusive_group()
    which.add_argument("--port", type=int, help="stop the sandbox on this port")
    which.add_argument("--all", action="store_true", help="stop every sandbox started with 'up' or 'replica'")
    down.set_defaults(handler=cmd_down)

    status = sub.add_parser("status", help="list the servers started with 'up' or 'replica'",
                            description="List the sandboxes started with 'up' or 'replica', whether they "
                                        "run, and which one each replica follows.")
    status.add_argument("--json", action="store_true", help="one JSON object per sandbox")
    status.set_defaults(handler=cmd_status)


def _stop(path: Path, state: dict[str, Any]) -> None:
    if running(state):
        stop_process_group(int(state["pid"]))
    if state.get("owns_workdir") and state.get("workdir"):
        shutil.rmtree(state["workdir"], ignore_errors=True)
    path.unlink(missing_ok=True)


def cmd_down(args: argparse.Namespace) -> int:
    """``sluice sandbox down``: stop the last recorded sandbox (or the one on ``--port``, or ``--all``)."""
    chosen = states()
    if args.port is not None:
        chosen = [(p, s) for p, s in chosen if int(s.get("port", 0)) == args.port]
        if not chosen:
            print(f"sluice: no sandbox was started on port {args.port} (see 'sluice sandbox status')",
                  file=sys.stderr)
            return 1
    elif not args.all:
        chosen = chosen[-1:]
    if not chosen:
        print("sluice: no sandbox is running", file=sys.stderr)
        return 0
    for path, state in chosen:
        was_running = running(state)
        _stop(path, state)
        what = "stopped" if was_running else "was not running; forgot"
        print(f"{state.get('flavor')} sandbox on port {state.get('port')} {what}", file=sys.stderr)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """``sluice sandbox status``: one line (or JSON object) per recorded sandbox, running or not."""
    recorded = states()
    if not recorded and not args.json:
        print("no sandboxes (start one with 'sluice sandbox up')")
    for _path, state in recorded:
        runs = running(state)
        if args.json:
            print(json.dumps({**state, "running": runs}))
            continue
        role = f"  replica of port {state['replica_of']}" if "replica_of" in state else ""
        print(f"{state.get('flavor')} {state.get('version')} port {state.get('port')} pid {state.get('pid')} "
              f"{'running' if runs else 'NOT RUNNING'}{role}  {state.get('dsn')}  {state.get('workdir')}")
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
