"""A purged start's error: what it names, its remedy, and its crossing out of a Spark worker."""

from __future__ import annotations

import pytest

from sluice.binlog.gtid import MariadbGtidPosition
from sluice.errors import BinlogPurgedError, SourceBehindError, carried, carry
from sluice.io.purged import missing_mariadb

pytestmark = pytest.mark.unit


def test_the_error_names_the_first_missing_file_and_the_remedy():
    err = BinlogPurgedError("the stream's start binlog.000002:1234 is no longer on the server at "
                            "mysql://repl@db:3306/: the binlog files from binlog.000002 up to binlog.000005 "
                            "were purged", file="binlog.000002")
    text = str(err)
    assert isinstance(err, SourceBehindError) and err.file == "binlog.000002" and err.gtids is None
    assert text.startswith("the stream's start binlog.000002:1234 is no longer on the server")
    assert "sluice snapshot --source DSN --lake LAKE --tables REGEX" in text
    assert "--snapshot when-needed" in text and "\n" not in text


def test_a_command_gives_its_own_remedy_and_keeps_the_facts():
    err = BinlogPurgedError("the server at mysql://repl@db:3306/ no longer has the transactions u:6-9",
                            gtids="u:6-9")
    mine = err.with_remedy("Run: sluice snapshot --lake ./lake --tables 'shop\\..*'")
    assert str(mine) == ("the server at mysql://repl@db:3306/ no longer has the transactions u:6-9. Run: "
                         "sluice snapshot --lake ./lake --tables 'shop\\..*'")
    assert mine.gtids == "u:6-9" and "when-needed" not in str(mine)


def test_it_crosses_a_process_whole():
    err = BinlogPurgedError("the stream's start b.000001:4 is gone", file="b.000001", gtids="0-1-3..9")
    back = carried("Traceback ...\n" + carry(err) + "\n at py4j")
    assert type(back) is BinlogPurgedError and str(back) == str(err)
    assert back.file == "b.000001" and back.gtids == "0-1-3..9"
    assert str(back.with_remedy("Snapshot again.")) == "the stream's start b.000001:4 is gone. Snapshot again."


def test_mariadb_names_per_domain_what_the_oldest_file_starts_after():
    held = MariadbGtidPosition.parse("0-1-5,1-2-7")
    before = MariadbGtidPosition.parse("0-1-12,1-2-7,2-3-1")
    assert missing_mariadb(held, before) == "0-1-6..12,2-3-1"
    assert missing_mariadb(MariadbGtidPosition.parse("0-1-12"), MariadbGtidPosition.parse("0-1-12")) == ""
    assert missing_mariadb(MariadbGtidPosition.parse("0-1-11"), MariadbGtidPosition.parse("0-2-12")) == "0-2-12"
