"""A server's flavor has one name wherever sluice learns it: from a connection's handshake, from a
binlog's FORMAT_DESCRIPTION and from a DSN's scheme; and the schema maps types by that name (no
server)."""

from __future__ import annotations

import socket

import pytest

from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, ChangeCapture
from sluice.cdc.schema import Catalog, apply_ddl
from sluice.dsn import ConnectionConfig, flavor_of, parse_dsn
from sluice.io.connection import Connection
from sluice.wire.handshake import parse_handshake
from tests.unit.binlog.decoders.test_events import fde
from tests.unit.wire.test_handshake import MARIADB_10_11_GREETING, MYSQL_9_GREETING, _payload

pytestmark = pytest.mark.unit

SERVERS = [(MYSQL_9_GREETING, "8.0.36-log", False), (MARIADB_10_11_GREETING, "10.11.6-MariaDB-log", True)]


def connection_flavor(greeting: bytes) -> str:
    """``Connection.flavor`` of a connection that received ``greeting``."""
    ours, theirs = socket.socketpair()
    try:
        conn = Connection(ours, ConnectionConfig(), "a test socket")
        conn._handshake = parse_handshake(_payload(greeting))
        return conn.flavor
    finally:
        ours.close()
        theirs.close()


def binlog_flavor(version: str) -> str | None:
    """The flavor a capture learns from a FORMAT_DESCRIPTION written by ``version``."""
    capture = ChangeCapture(CaptureConfig(), Checkpoint("binlog.000001", 4))
    data = fde(version)
    capture.feed("binlog.000001", 4, 4 + len(data), data)
    return capture.tracker.flavor


@pytest.mark.parametrize(("greeting", "version", "is_mariadb"), SERVERS, ids=["mysql", "mariadb"])
def test_the_handshake_the_binlog_and_the_dsn_name_a_flavor_alike(greeting: bytes, version: str,
                                                                  is_mariadb: bool) -> None:
    name = flavor_of(is_mariadb)
    assert connection_flavor(greeting) == binlog_flavor(version) == name
    assert parse_dsn(f"{name}://repl@127.0.0.1:3306/").flavor == name


def test_the_schema_maps_types_by_that_name() -> None:
    # MariaDB's JSON is a LONGTEXT: the catalog of a connection to MariaDB must map it so.
    for is_mariadb, kind in ((True, "longtext"), (False, "json")):
        catalog, outcome = apply_ddl(Catalog(flavor=flavor_of(is_mariadb)), "CREATE TABLE t (j JSON)", "d")
        assert outcome.understood
        table = catalog.get("d", "t")
        assert table is not None and table.columns[0].data_type == kind
