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
