"""``--route REGEX=TARGET`` of the commands that read a lake's mirrors besides ``sluice run``
(``snapshot``, ``verify``): the lake records the routes of its run (``capture.json``), and these
commands take them from there; a ``--route`` given to them must be the run's, in the same order.
``sluice run``'s own option is a setting of ``sluice.commands.run_settings``."""

from __future__ import annotations

import argparse
from typing import Any

from sluice.errors import ConfigError

__all__ = ["ROUTE_HELP", "add_route_option", "routes_of_lake"]

ROUTE_HELP = ("the routes sluice run was given (REGEX=TARGET, as often as there given); by default the ones the "
              "lake records of its run")


def add_route_option(parser: argparse.ArgumentParser | Any) -> None:
    """Add ``--route``, given any number of times."""
    parser.add_argument("--route", dest="routes", metavar="REGEX=TARGET", action="append", help=ROUTE_HELP)


def routes_of_lake(given: list[str] | None, recorded: Any) -> Any:
    """The ``Routes`` a command on the lake follows: the recorded ones (``capture.json``'s ``routes``),
    which ``given`` must equal when given; None when there are none."""
    from sluice.cdc.routes import parse_routes

    kept = recorded.get("routes") if isinstance(recorded, dict) else None
    routes = parse_routes(given) if given else None
    if routes is not None and isinstance(recorded, dict) and (kept or []) != routes.texts:
        raise ConfigError(
            f"--route {' --route '.join(routes.texts)} is not what the lake's sluice run routes "
            f"({', '.join(kept) if kept else 'no route'}): give its routes, or none to take them from the lake")
    return routes if routes is not None else parse_routes(kept, "the lake's capture.json: routes") if kept else None
