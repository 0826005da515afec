"""Credentials of account statements never leave the query decoder."""

import pytest

from sluice.binlog.redact import redact_credentials

pytestmark = pytest.mark.unit

SECRET = "s3cr\\'et pa''ss"


@pytest.mark.parametrize("sql", [
    "CREATE USER 'bob'@'%' IDENTIFIED BY '{s}'",
    "CREATE OR REPLACE USER bob IDENTIFIED BY '{s}'",
    "create user if not exists bob@localhost identified by '{s}', carol identified by '{s}'",
    "ALTER USER 'bob'@'%' IDENTIFIED BY '{s}'",
    "ALTER USER bob IDENTIFIED WITH mysql_native_password BY '{s}'",
    "CREATE USER bob IDENTIFIED VIA ed25519 USING PASSWORD('{s}')",
    "CREATE USER bob IDENTIFIED VIA mysql_native_password USING '{s}'",
    "CREATE USER bob IDENTIFIED BY PASSWORD '{s}'",
    "CREATE USER bob IDENTIFIED WITH caching_sha2_password AS '{s}'",
    "SET PASSWORD FOR 'bob'@'%' = PASSWORD('{s}')",
    "SET PASSWORD FOR bob = '{s}'",
    "SET PASSWORD = OLD_PASSWORD('{s}')",
    "GRANT SELECT ON shop.* TO 'bob'@'%' IDENTIFIED BY '{s}'",
    "CHANGE MASTER TO MASTER_HOST='db1', MASTER_USER='repl', MASTER_PASSWORD='{s}'",
    "CHANGE REPLICATION SOURCE TO SOURCE_PASSWORD = \"{s}\"",
    "/* comment */ CREATE USER bob IDENTIFIED BY '{s}'",
    "CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'u', PASSWORD '{s}')",
])
def test_secret_is_masked(sql):
    text = sql.format(s=SECRET if "\"" not in sql else "s3cret").encode()
    out = redact_credentials(text)
    assert b"s3cr" not in out
    assert b"<redacted>" in out


def test_names_and_hosts_stay():
    out = redact_credentials(b"CHANGE MASTER TO MASTER_HOST='db1', MASTER_USER='repl', MASTER_PASSWORD='x'")
    assert out == b"CHANGE MASTER TO MASTER_HOST='db1', MASTER_USER='repl', MASTER_PASSWORD='<redacted>'"
    assert redact_credentials(b"CREATE USER 'bob'@'%' IDENTIFIED BY 'x'") == (
        b"CREATE USER 'bob'@'%' IDENTIFIED BY '<redacted>'")


@pytest.mark.parametrize("sql", [
    b"INSERT INTO t VALUES ('IDENTIFIED BY ''x''')",
    b"CREATE TABLE t (password VARCHAR(10) DEFAULT 'by')",
    b"UPDATE users SET password = 'abc'",
    b"BEGIN",
])
def test_other_statements_untouched(sql):
    assert redact_credentials(sql) is sql
