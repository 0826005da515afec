"""The ``sluice sandbox`` actions that start a server or change its role: ``up`` (a server in the
background), ``replica`` (a replica of a running sandbox, recorded with the port it follows) and
``promote`` (a replica made the primary, ``sluice.sandbox.replication``). Their options are in
``sluice.sandbox.command``; the state files they write, in ``sluice.sandbox.state``.
"""

from __future__ import annotations

import argparse
import json
import sys

from sluice.errors import ConfigError
from sluice.sandbox.accounts import PASSWORDS
from sluice.sandbox.replication import ReplicationOptions, promote, start_replica
from sluice.sandbox.server import Sandbox
from sluice.sandbox.state import find, peer, record, running, state_file

__all__ = ["cmd_promote", "cmd_replica", "cmd_up"]


def _refuse_taken(port: int | None) -> None:
    path = None if port is None else state_file(port)
    if path is not None and path.exists() and running(json.loads(path.read_text())):
        raise ConfigError(f"a sandbox already runs on port {port}; stop it with 'sluice sandbox down --port {port}'")


def cmd_up(args: argparse.Namespace) -> int:
    """``sluice sandbox up``: start a detached server, record its state file, print its DSN."""
    _refuse_taken(args.port)
    box = Sandbox.start(args.flavor, port=args.port, settings=dict(args.settings), workdir=args.workdir,
                        detached=True)
    pid = box.detach()
    record(box, pid, owns_workdir=args.workdir is None)
    print(box.dsn())
    print(f"{box.flavor} {box.version} is up on {box.host}:{box.port} (pid {pid})", file=sys.stderr)
    _describe(box)
    return 0


def cmd_replica(args: argparse.Namespace) -> int:
    """``sluice sandbox replica``: start a detached replica of a running sandbox, print its DSN."""
    primary = find(args.of, replica=None if args.of is not None else False)
    _refuse_taken(args.port)
    options = ReplicationOptions(gtids=args.gtids == "on", log_replica_updates=args.log_replica_updates == "on",
                                 read_only=not args.writable)
    box = start_replica(peer(primary), options, port=args.port, settings=dict(args.settings),
                        workdir=args.workdir, detached=True)
    pid = box.detach()
    record(box, pid, owns_workdir=args.workdir is None, replica_of=primary["port"],
           replication={"gtids": options.gtids, "log_replica_updates": options.log_replica_updates})
    print(box.dsn())
    how = "by GTID" if options.gtids else "by binlog file and offset"
    print(f"{box.flavor} {box.version} is up on {box.host}:{box.port} (pid {pid}), a replica of port "
          f"{primary['port']} following {how}, log_replica_updates {'ON' if options.log_replica_updates else 'OFF'}, "
          f"{'writable' if args.writable else 'read-only'}; caught up", file=sys.stderr)
    _describe(box)
    print(f"promote it with: sluice sandbox promote --port {box.port}", file=sys.stderr)
    return 0


def cmd_promote(args: argparse.Namespace) -> int:
    """``sluice sandbox promote``: make a recorded replica the primary."""
    state = find(args.port, replica=None if args.port is not None else True)
    promote(peer(state))
    was_of = state.pop("replica_of", None)
    state_file(int(state["port"])).write_text(json.dumps(state, indent=2) + "\n")  # a primary from now on
    before = f" (it followed port {was_of})" if was_of is not None else ""
    print(f"the {state['flavor']} sandbox on port {state['port']} is a primary now{before}: replication stopped "
          f"and forgotten, writes taken", file=sys.stderr)
    print(state["dsn"])
    return 0


def _describe(box: Sandbox) -> None:
    """The details of a new sandbox on stderr: its users' DSNs, TLS CA, socket, client, directory."""
    err = sys.stderr
    print(f"  root:     {box.dsn()}", file=err)
    print(f"  repl:     {box.dsn('repl')}   (REPLICATION SLAVE, REPLICATION CLIENT, SELECT)", file=err)
    if box.has_ed25519_user:
        print(f"  ed25519:  {box.dsn('ed')}", file=err)
    print(f"  TLS CA:   {box.ca_path}", file=err)
    print(f"  socket:   {box.socket}   (root password: {PASSWORDS['root']})", file=err)
    print(f"  SQL:      {' '.join(box.client_argv())}", file=err)
    print(f"  data:     {box.workdir}", file=err)
    print(f"stop it with: sluice sandbox down --port {box.port}", file=err)
