"""DSN parsing: every form the README shows, and the errors for bad input."""

import pytest

from sluice.dsn import SslMode, parse_dsn
from sluice.errors import ConfigError

pytestmark = pytest.mark.unit


def test_full_tcp_dsn():
    cfg = parse_dsn("mysql://repl:s%40cret@db.example:3307/shop?ssl=verify-ca&ssl_ca=/etc/ca.pem", environ={})
    assert (cfg.host, cfg.port, cfg.user, cfg.password, cfg.database) == (
        "db.example", 3307, "repl", "s@cret", "shop")
    assert cfg.ssl_mode is SslMode.VERIFY_CA and cfg.ssl_ca == "/etc/ca.pem"
    assert cfg.flavor == "mysql"


def test_defaults_and_mariadb_scheme():
    cfg = parse_dsn("mariadb://root@localhost", environ={})
    assert (cfg.port, cfg.flavor, cfg.ssl_mode, cfg.password) == (3306, "mariadb", SslMode.PREFERRED, "")


def test_socket_dsn():
    cfg = parse_dsn("mysql://me@localhost/?socket=/run/mysqld/mysqld.sock", environ={})
    assert cfg.socket == "/run/mysqld/mysqld.sock"


def test_password_from_named_environment_variable():
    cfg = parse_dsn("mysql://me@h/?password_env=DBPW", environ={"DBPW": "x y"})
    assert cfg.password == "x y"


def test_password_from_default_environment_variable():
    assert parse_dsn("mysql://me@h/", environ={"SLUICE_PASSWORD": "pw"}).password == "pw"


def test_missing_named_environment_variable_is_an_error():
    with pytest.raises(ConfigError, match="DBPW"):
        parse_dsn("mysql://me@h/?password_env=DBPW", environ={})


def test_password_never_shown():
    cfg = parse_dsn("mysql://me:topsecret@h:1/", environ={})
    for text in (repr(cfg), str(cfg), cfg.redacted()):
        assert "topsecret" not in text
    assert "***" in str(cfg)


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("postgres://x@h/", "scheme"),
        ("mysql://x@h:99999/", "port"),
        ("mysql://x@h/?ssl=maybe", "TLS mode"),
        ("mysql://x@h/?colour=red", "unknown DSN parameter"),
        ("mysql://x@h/?connect_timeout=-1", "positive"),
        ("mysql://x@h/?server_id=abc", "whole number"),
    ],
)
def test_bad_dsns_say_what_is_wrong(dsn, message):
    with pytest.raises(ConfigError, match=message):
        parse_dsn(dsn, environ={})


def test_a_flavor_is_the_text_a_dsn_scheme_and_the_lake_files_spell():
    import json

    from sluice.dsn import Flavor, flavor_of

    assert flavor_of(True) is Flavor.MARIADB and flavor_of(False) is Flavor.MYSQL
    assert Flavor.MARIADB == "mariadb" and Flavor("mysql") is Flavor.MYSQL
    assert json.dumps({"flavor": flavor_of(True)}) == '{"flavor": "mariadb"}'
    assert parse_dsn("mariadb://u@h/").flavor == Flavor.MARIADB


def test_every_connection_has_a_deadline_unless_read_timeout_is_zero():
    from sluice.dsn import DEFAULT_READ_TIMEOUT

    assert parse_dsn("mysql://u@h/").deadline == DEFAULT_READ_TIMEOUT == 30.0
    assert parse_dsn("mysql://u@h/?read_timeout=2.5").deadline == 2.5
    assert parse_dsn("mysql://u@h/?read_timeout=0").deadline is None


def test_with_read_timeout_keeps_a_dsn_s_own():
    from sluice.dsn import with_read_timeout

    assert parse_dsn(with_read_timeout("mysql://u:p%40w@h:3307/db", 5)).read_timeout == 5.0
    joined = with_read_timeout("mysql://u@h/?ssl=disabled", 0.5)
    assert joined == "mysql://u@h/?ssl=disabled&read_timeout=0.5" and parse_dsn(joined).password == ""
    assert with_read_timeout("mysql://u@h/?read_timeout=60", 5) == "mysql://u@h/?read_timeout=60"
    assert parse_dsn(with_read_timeout("mysql://u:p%40w@h:3307/db", 5)).password == "p@w"


def test_the_heartbeat_fits_a_few_times_in_the_deadline():
    from sluice.io.replication import StreamConfig, heartbeat_period

    assert heartbeat_period(StreamConfig(parse_dsn("mysql://u@h/"))) == 5.0
    assert heartbeat_period(StreamConfig(parse_dsn("mysql://u@h/?read_timeout=2"))) == 0.5
    assert heartbeat_period(StreamConfig(parse_dsn("mysql://u@h/?read_timeout=8"), heartbeat_period=0)) == 2.0
    assert heartbeat_period(StreamConfig(parse_dsn("mysql://u@h/?read_timeout=0"), heartbeat_period=0)) == 0
