"""Shared fixtures: throwaway MariaDB and MySQL servers for the integration suites.

``mariadb_server`` (the system's MariaDB, 10.11 on Debian 12), ``mysql_server`` (MySQL 9.x) and
``mariadb11_server`` (MariaDB 11.8 LTS) are started once per session on free ports and stopped at
its end, also when tests fail. A server that cannot be started makes every test using it ERROR
with the reason (missing binaries, the server's error log): server suites are never skipped.
Tests that need a server of their own with other settings use ``sandbox_factory`` (stopped at the
test's end; ``module_sandbox_factory`` for a module's fixtures). ``s3_server`` is
a real S3 API server (moto's) for lakes on object storage.

``server`` runs a test on MariaDB 10.11 and MySQL 9.x, ``server3`` on MariaDB 11.8 too; a suite
that runs on all three takes ``server3`` (or makes its own sandboxes over ``THREE_FLAVORS``). A full CI run
must stay well under 45 minutes, so MariaDB 11.8 runs, for about five minutes in all, the suites
where what it writes differs from 10.11:

- the type matrix (its default utf8mb4 collations), the capture with schema changes (the DDL it
  logs, the query events' collation status variable), resume and kill (``end_log_pos`` 0 inside
  transactions with ``binlog_legacy_event_pos=OFF``, GTID starts that ``binlog_gtid_index`` seeks
  straight to) and the replication stream (GTID events with ``flags_extra``): about a minute;
- the sandbox and connection suites (its private root, its handshake without ``5.5.5-``) and the
  demo (``./run demo --flavor mariadb11``): about a minute and a half;
- the mirror DDL suite with 11.8's default metadata (NO_LOG: names from the DDL it logs) and its
  partition test, about two minutes. FULL metadata is the binlog's own names, which the type
  matrix covers on 11.8.

The other Spark suites (chaos, snapshots, the pipeline, the cluster) read the binlog through the
same stream and decoders as these and take minutes each per server: they stay on the two others.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import hypothesis
import pytest

from sluice.sandbox.replication import ReplicationOptions, start_replica
from sluice.sandbox.s3 import S3Sandbox
from sluice.sandbox.server import Flavor, Sandbox

SandboxFactory = Callable[..., Sandbox]


def kills(default: int) -> int:
    """How many times a kill-and-restart suite kills (``SLUICE_TEST_KILLS``, else its ``default``)."""
    text = os.environ.get("SLUICE_TEST_KILLS", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else default


# A property test checks what a value is, never how long it took: hypothesis' per-example deadline
# (200 ms) fails a correct test on a loaded machine, so it is off; speed is measured in bench/.
hypothesis.settings.register_profile("sluice", deadline=None)
hypothesis.settings.load_profile("sluice")


def examples(full: int) -> int:
    """How many examples a property test draws: ``full``, or the share ``SLUICE_TEST_EXAMPLES`` names
    (``./run test -m unit``, the fast loop, draws a quarter; a full run draws every one)."""
    text = os.environ.get("SLUICE_TEST_EXAMPLES", "").strip() or "1"
    try:
        share = float(text)
    except ValueError:
        share = -1.0
    if not 0 < share <= 1:
        raise pytest.UsageError(f"SLUICE_TEST_EXAMPLES={text!r}: the share of examples is a number in (0, 1]")
    return min(full, max(10, round(full * share)))


SERVICE_MARKS = ("spark", "mysql", "mariadb", "mariadb11")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A ``unit`` test needs no server and no Spark: one that asks for either is a mistake of marks.
    A Spark test is ``slow``: it starts Spark's session, a ``sluice run`` or both, seconds each."""
    for item in items:
        marks = {m.name for m in item.iter_markers()}
        if "unit" in marks and marks & set(SERVICE_MARKS):
            raise pytest.UsageError(f"{item.nodeid} is marked unit and {sorted(marks & set(SERVICE_MARKS))}: "
                                    "a unit test needs no server and no Spark; move it to tests/integration")
        if "spark" in marks and "slow" not in marks:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[Sandbox]:
    with Sandbox.start("mariadb") as server:
        yield server


@pytest.fixture(scope="session")
def mysql_server() -> Iterator[Sandbox]:
    with Sandbox.start("mysql") as server:
        yield server


@pytest.fixture(scope="session")
def mariadb11_server() -> Iterator[Sandbox]:
    with Sandbox.start("mariadb11") as server:
        yield server


# Flavor names (for sandbox_factory) and session-server fixture names, each with its marker.
TWO_FLAVORS = [
    pytest.param("mariadb", marks=pytest.mark.mariadb, id="mariadb"),
    pytest.param("mysql", marks=pytest.mark.mysql, id="mysql"),
]
THREE_FLAVORS = [*TWO_FLAVORS, pytest.param("mariadb11", marks=pytest.mark.mariadb11, id="mariadb11")]
THREE_SERVERS = [pytest.param(f"{p.values[0]}_server", marks=p.marks, id=p.id) for p in THREE_FLAVORS]


@pytest.fixture(params=THREE_SERVERS)
def server3(request: pytest.FixtureRequest) -> Sandbox:
    """Each of the three session servers in turn (MariaDB 10.11, MySQL 9.x, MariaDB 11.8)."""
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


@pytest.fixture(params=THREE_SERVERS[:2])
def server(request: pytest.FixtureRequest) -> Sandbox:
    """Each flavor's session server in turn: a test taking ``server`` runs once per flavor."""
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


@pytest.fixture(params=["default", "FULL"])
def row_metadata(request: pytest.FixtureRequest, server: Sandbox) -> Iterator[str]:
    """The ``server``'s binlog_row_metadata for one test: its default (MariaDB NO_LOG, MySQL MINIMAL),
    then FULL; the setting is restored afterwards."""
    with binlog_row_metadata(server, request.param):
        yield request.param


@contextlib.contextmanager
def binlog_row_metadata(server: Sandbox, setting: str) -> Iterator[None]:
    """The server's binlog_row_metadata set to ``setting`` (``default``: left as it is), then restored.
    Suites too long to run all four (flavor, metadata) pairs take two with it."""
    from sluice.dsn import parse_dsn
    from sluice.io.connection import Connection

    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        old = conn.query("SELECT @@GLOBAL.binlog_row_metadata").rows[0][0]
        if setting != "default":
            conn.execute(f"SET GLOBAL binlog_row_metadata = '{setting}'")
    try:
        yield
    finally:
        with Connection.open(parse_dsn(server.dsn("root"))) as conn:
            conn.execute(f"SET GLOBAL binlog_row_metadata = '{old}'")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Sandbox]:
    """A real S3 API server (``moto_server`` in its own process) with a bucket ``lake``."""
    with S3Sandbox.start() as server:
        yield server


class _Servers:
    """A fixture's ``SandboxFactory``: ``servers("mysql", settings={"binlog_checksum": "NONE"})`` -> a
    started ``Sandbox``; with ``replica_of=primary`` (and ``replication=ReplicationOptions(...)``) a
    replica of that sandbox, caught up (``sluice.sandbox.replication``: promote it with ``promote``).
    ``stop_all`` stops every server it started, the last started first."""

    def __init__(self) -> None:
        self.started: list[Sandbox] = []

    def __call__(self, flavor: Flavor, *, settings: Mapping[str, str] | None = None, port: int | None = None,
                 workdir: Path | None = None, replica_of: Sandbox | None = None,
                 replication: ReplicationOptions | None = None) -> Sandbox:
        if replica_of is not None:
            assert replica_of.flavor == flavor, f"a {flavor} replica of a {replica_of.flavor} sandbox"
            server = start_replica(replica_of, replication, settings=settings, port=port, workdir=workdir)
        else:
            server = Sandbox.start(flavor, settings=settings or {}, port=port, workdir=workdir)
        self.started.append(server)
        return server

    def stop_all(self) -> None:
        errors = []
        for server in reversed(self.started):
            try:
                server.stop()
            except Exception as exc:  # stop the others anyway, then report
                errors.append(exc)
        self.started.clear()
        if errors:
            raise errors[0]


@pytest.fixture
def sandbox_factory() -> Iterator[SandboxFactory]:
    """Servers of the test's own (``_Servers``), stopped when the test ends (``.stop()`` stops one
    earlier), so that the servers of a whole run are never up at once."""
    servers = _Servers()
    yield servers
    servers.stop_all()


@pytest.fixture(scope="module")
def module_sandbox_factory() -> Iterator[SandboxFactory]:
    """Servers for a module's fixtures (``_Servers``), stopped when the module's tests are done."""
    servers = _Servers()
    yield servers
    servers.stop_all()


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A real Spark session, ``local[2]``, with sluice's ``binlog`` data source registered, its
    Python processes started as ``sluice run`` starts them."""
    from sluice.spark.runtime.session import spark_session

    session = spark_session(master="local[2]", app_name="sluice-tests")
    yield session
    session.stop()


def core_or_twin(enabled: bool) -> Iterator[bool]:
    """For a fixture: what follows runs on the compiled core (``enabled``) or on the Python twins,
    and a test that asks for the core skips when it was not built."""
    from sluice.binlog import rowplan

    previous = rowplan.use_compiled(enabled)
    if enabled and rowplan.core() is None:
        rowplan.use_compiled(previous)
        pytest.skip("the compiled core was not built")
    try:
        yield enabled
    finally:
        rowplan.use_compiled(previous)

