"""The ``sluice`` command line: argument parsing and dispatch, no business logic.

Each subcommand lives in a module that offers ``register(subparsers)``; the parser it adds sets
``handler`` to a function taking the parsed arguments and returning an exit code.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from sluice import __version__
from sluice.errors import SluiceError


def build_parser() -> argparse.ArgumentParser:
    """The ``sluice`` argument parser, with every command's subparser registered."""
    parser = argparse.ArgumentParser(
        prog="sluice",
        description="Change data capture from the MySQL / MariaDB binary log.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run 'sluice COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"sluice {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    from sluice.commands import demo, dump, tail, verify
    from sluice.commands import run as run_command
    from sluice.commands import snapshot as snapshot_command
    from sluice.sandbox import command as sandbox_command

    demo.register(sub)
    dump.register(sub)
    tail.register(sub)
    run_command.register(sub)
    snapshot_command.register(sub)
    sandbox_command.register(sub)
    verify.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``sluice`` with ``argv``; a ``SluiceError`` becomes a one-line message. Returns the exit status."""
    parser = build_parser()
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
