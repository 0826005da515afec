"""The ``sluice`` command line: argument parsing and dispatch, no business logic.

Each subcommand lives in a module that offers ``register(subparsers)``; the parser it adds sets
``handler`` to a function taking the parsed arguments and returning an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from sluice import __version__
from sluice.errors import SluiceError

#: Each command's module, imported only when needed: ``sluice dump`` starts without the TLS,
#: sandbox and Spark code of the others, whose imports would be a sizeable part of a short dump.
COMMANDS = {
    "demo": "sluice.commands.demo",
    "dump": "sluice.commands.dump",
    "tail": "sluice.commands.tail",
    "run": "sluice.commands.run",
    "snapshot": "sluice.commands.snapshot",
    "sandbox": "sluice.sandbox.command",
    "verify": "sluice.commands.verify",
    "maintain": "sluice.commands.maintain",
    "status": "sluice.commands.status",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``sluice`` argument parser, with every command's subparser registered (``only``: just
    that command's)."""
    parser = argparse.ArgumentParser(
        prog="sluice",
        description="Change data capture from the MySQL / MariaDB binary log.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run 'sluice COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"sluice {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(module).register(sub)
    for command in sub.choices.values():  # `sluice run ... -v` as well as `sluice -v run ...`
        help_text = "more log output (-vv for debug)"
        try:
            command.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS, help=help_text)
        except argparse.ArgumentError:  # the command's own -v (dump's --values)
            command.add_argument("--verbose", action="count", default=argparse.SUPPRESS, help=help_text)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, when its first word that is not an option is one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``sluice`` with ``argv``; a ``SluiceError`` becomes a one-line message. Returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except SluiceError as exc:
        print(f"sluice: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("sluice: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the file system refused something: name it, no traceback
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"sluice: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: one line, the traceback with -vv
        log = logging.getLogger("sluice")
        log.debug("unexpected error", exc_info=True)
        print(f"sluice: internal error: {type(exc).__name__}: {exc} (run with -vv for the traceback; "
              "please report it)", file=sys.stderr)
        return 70


if __name__ == "__main__":
    sys.exit(main())
