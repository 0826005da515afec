"""Transaction assembly on sequences of decoded events, in the orders MySQL 9.7 and MariaDB 10.11 write them.

Every event here is 100 bytes long, so the n-th event of a test starts at ``4 + 100 * n``. The
sequences follow what the servers were seen to write (``mysqlbinlog`` / ``sluice dump --events``
of real binlogs): MySQL GTID, BEGIN ... XID; DDL after a GTID; XA START ... XA END, XA_PREPARE and
a later XA COMMIT with a GTID of its own; MariaDB's GTID event with FL_STANDALONE, FL_DDL,
FL_PREPARED_XA and FL_COMPLETED_XA; TRANSACTION_PAYLOAD with BEGIN ... XID inside.
"""

from __future__ import annotations

import itertools
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from sluice.binlog import events as ev
from sluice.binlog.constants import EventType as E
from sluice.binlog.gtid import MariadbGtid, MysqlGtidSet
from sluice.binlog.header import LOG_EVENT_ARTIFICIAL_F, EventHeader
from sluice.binlog.parser import EventParser
from sluice.binlog.position import Checkpoint
from sluice.cdc.transactions import Transaction, TransactionAssembler, xid_key
from sluice.errors import ConfigError, DataLossError, ProtocolError
from sluice.io.binlog_file import BinlogFile

pytestmark = pytest.mark.unit

SID = uuid.UUID("3d687a2c-b38e-11ed-91ef-3f952e283fc3")
S = str(SID)
F1, F2 = "binlog.000001", "binlog.000002"
TS = 1_700_000_000
SIZE = 100


def at(n: int) -> int:
    """Offset of the n-th 100-byte event after the magic bytes."""
    return 4 + SIZE * n


def hdr(type_code: int, *, ts: int = TS, server_id: int = 1, log_pos: int = 1, flags: int = 0) -> EventHeader:
    return EventHeader(ts, type_code, server_id, SIZE, log_pos, flags)


def gtid(gno: int, *, tag: str | None = None, commit_us: int | None = None) -> ev.GtidEvent:
    code = E.GTID_TAGGED_LOG_EVENT if tag else E.GTID_LOG_EVENT if gno else E.ANONYMOUS_GTID_LOG_EVENT
    return ev.GtidEvent(hdr(code), 0, SID, gno, tag, immediate_commit_timestamp=commit_us)


def query(sql: str, *, ts: int = TS) -> ev.QueryEvent:
    return ev.QueryEvent(hdr(E.QUERY_EVENT, ts=ts), 9, 0, 0, "shop", sql.encode())


def tmap() -> ev.TableMapEvent:
    return ev.TableMapEvent(hdr(E.TABLE_MAP_EVENT), 7, 1, "shop", "t", 1, (3,), (0,), (False,), (), None, b"t")


def rows(n: int = 1) -> ev.RowsEvent:
    return ev.RowsEvent(hdr(E.WRITE_ROWS_EVENT_V2), "write", 7, 1, tmap(), 1, None, [(i,) for i in range(n)])


def xid(*, ts: int = TS) -> ev.XidEvent:
    return ev.XidEvent(hdr(E.XID_EVENT, ts=ts), 42)


def xa_prepare(gtrid: bytes, bqual: bytes = b"", fmt: int = 1, *, one_phase: bool = False) -> ev.XaPrepareEvent:
    return ev.XaPrepareEvent(hdr(E.XA_PREPARE_LOG_EVENT), one_phase, fmt, gtrid, bqual)


def maria(seq: int, flags: int = 0x0C, *, domain: int = 0, server: int = 1,
          xa: tuple[int, bytes, bytes] | None = None) -> ev.MariadbGtidEvent:
    fmt, gtrid, bqual = xa if xa else (None, None, None)
    return ev.MariadbGtidEvent(hdr(E.GTID_EVENT, server_id=server), seq, domain, flags,
                               xa_format_id=fmt, xa_gtrid=gtrid, xa_bqual=bqual)


def annotate(sql: str = "INSERT INTO t VALUES (1)") -> ev.AnnotateRowsEvent:
    return ev.AnnotateRowsEvent(hdr(E.ANNOTATE_ROWS_EVENT), sql.encode())


def rotate(next_file: str, position: int = 4, *, artificial: bool = False) -> ev.RotateEvent:
    flags = LOG_EVENT_ARTIFICIAL_F if artificial else 0
    return ev.RotateEvent(hdr(E.ROTATE_EVENT, log_pos=0 if artificial else 1, flags=flags), position, next_file)


def fde(*, log_pos: int = 1) -> ev.FormatDescriptionEvent:
    return ev.FormatDescriptionEvent(hdr(E.FORMAT_DESCRIPTION_EVENT, log_pos=log_pos), 4, "9.7.4", 0, 19, b"", 1,
                                     False, (9, 7, 4))


def previous(text: str) -> ev.PreviousGtidsEvent:
    return ev.PreviousGtidsEvent(hdr(E.PREVIOUS_GTIDS_LOG_EVENT), MysqlGtidSet.parse(text))


def payload(*inner: Any) -> ev.TransactionPayloadEvent:
    return ev.TransactionPayloadEvent(hdr(E.TRANSACTION_PAYLOAD_EVENT), 0, 80, 300, tuple(inner))


class Feed:
    """Feeds 100-byte events at consecutive offsets; a ROTATE switches to the file it names."""

    def __init__(self, start: Checkpoint | None = None, assembler: TransactionAssembler | None = None) -> None:
        self.start = start or Checkpoint(F1, 4)
        self.a = assembler or TransactionAssembler(self.start)
        self.file, self.pos = self.start.file, self.start.pos

    def __call__(self, *events: Any) -> list[Transaction]:
        out = []
        for e in events:
            pos = self.pos
            nxt = pos + SIZE if type(e) not in (ev.HeartbeatEvent,) and e.header.log_pos else pos
            tx = self.a.feed(self.file, pos, nxt, e)
            self.pos = nxt
            if type(e) is ev.RotateEvent:
                self.file, self.pos = e.next_file, e.position
            if tx is not None:
                out.append(tx)
        return out


def dml(gno: int, n_rows: int = 1) -> list[Any]:
    return [gtid(gno), query("BEGIN"), tmap(), rows(n_rows), xid()]


# -- MySQL ---------------------------------------------------------------------------------------------


def test_mysql_dml_commits_at_xid() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-4"))
    events = [gtid(5, commit_us=1_700_000_000_123_456), query("BEGIN"), tmap(), rows(2)]
    assert feed(*events) == []
    assert feed.a.in_transaction and feed.a.boundary == Checkpoint(F1, 4, f"{S}:1-4")
    (tx,) = feed(xid(ts=TS + 3))
    assert not feed.a.in_transaction
    assert tx.start == Checkpoint(F1, 4, f"{S}:1-4")
    assert tx.end == Checkpoint(F1, at(5), f"{S}:1-5") == feed.a.boundary
    assert (tx.gtid, tx.kind, tx.ts, tx.commit_us) == (f"{S}:5", "dml", TS + 3, 1_700_000_000_123_456)
    assert [(f, p, type(e).__name__) for f, p, e in tx.events] == [
        (F1, at(0), "GtidEvent"), (F1, at(1), "QueryEvent"), (F1, at(2), "TableMapEvent"),
        (F1, at(3), "RowsEvent"), (F1, at(4), "XidEvent"),
    ]
    assert tx.events[3][2] is events[3]  # the events as given, not copies


def test_mysql_commit_query_ends_a_non_transactional_transaction() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-4"))
    (tx,) = feed(gtid(5), query("BEGIN"), tmap(), rows(), query("COMMIT", ts=TS + 9))
    assert tx.kind == "dml" and tx.end == Checkpoint(F1, at(5), f"{S}:1-5") and tx.ts == TS + 9
    assert len(tx.events) == 5


def test_mysql_ddl_is_one_statement_after_its_gtid() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-4"))
    (tx,) = feed(gtid(5), query("/* c */ ALTER TABLE shop.t ADD COLUMN w INT"))
    assert tx.kind == "ddl" and tx.gtid == f"{S}:5" and len(tx.events) == 2
    assert tx.end == Checkpoint(F1, at(2), f"{S}:1-5")
    (tx2,) = feed(*dml(6))
    assert tx2.start == tx.end


def test_mysql_create_table_select_is_one_ddl_transaction() -> None:
    """MySQL 8.0.21+: GTID, BEGIN, "CREATE TABLE ... START TRANSACTION", rows, XID."""
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-4"))
    ctas = "CREATE TABLE `p`.`c` (\n  `a` int NOT NULL DEFAULT '0'\n) START TRANSACTION"
    (tx,) = feed(gtid(5), query("BEGIN"), query(ctas), tmap(), rows(), xid())
    assert tx.kind == "ddl" and len(tx.events) == 6
    (tx,) = feed(gtid(6), query(ctas), tmap(), rows(), xid())  # without BEGIN: still ends at the XID
    assert tx.kind == "ddl" and len(tx.events) == 5 and tx.end.pos == at(11)


def test_gtids_off_begin_opens_and_anonymous_gtids_do_not_touch_the_set() -> None:
    feed = Feed()
    (t1,) = feed(query("BEGIN"), tmap(), rows(), xid())
    assert (t1.gtid, t1.start, t1.end) == (None, Checkpoint(F1, 4), Checkpoint(F1, at(4)))
    (t2,) = feed(query("CREATE TABLE t2 (a INT)"))
    assert t2.kind == "ddl" and t2.start == t1.end and t2.end == Checkpoint(F1, at(5))
    (t3,) = feed(gtid(0), query("BEGIN"), tmap(), rows(), xid())
    assert t3.gtid is None and t3.end == Checkpoint(F1, at(10), None)
    feed2 = Feed(Checkpoint(F1, 4, f"{S}:1-4"))
    (t4,) = feed2(gtid(0), query("BEGIN"), tmap(), rows(), xid())
    assert t4.end.gtid_set == f"{S}:1-4"


def test_statement_events_without_a_gtid_open_the_transaction() -> None:
    feed = Feed()
    intvar = ev.IntvarEvent(hdr(E.INTVAR_EVENT), 2, 7)
    (tx,) = feed(intvar, query("CREATE TABLE t3 SELECT LAST_INSERT_ID()"))
    assert tx.kind == "ddl" and tx.start == Checkpoint(F1, 4) and [p for _f, p, _e in tx.events] == [at(0), at(1)]


def test_rollback_drops_the_transaction_but_consumes_its_gtid() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-4"))
    assert feed(gtid(5), query("BEGIN"), tmap(), rows(), query("SAVEPOINT `s`"), query("ROLLBACK TO `s`")) == []
    assert feed.a.in_transaction  # neither SAVEPOINT nor ROLLBACK TO ends it
    assert feed(query("ROLLBACK")) == []
    assert not feed.a.in_transaction
    assert feed.a.boundary == Checkpoint(F1, at(7), f"{S}:1-5")
    (tx,) = feed(*dml(6))
    assert tx.start == Checkpoint(F1, at(7), f"{S}:1-5") and tx.end.gtid_set == f"{S}:1-6"
    assert feed(gtid(7), query("BEGIN"), query("INSERT INTO m VALUES (1)"), query("rollback work")) == []
    assert feed.a.boundary.gtid_set == f"{S}:1-7"


def test_several_transactions_chain_end_to_start() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-9"))
    txs = feed(*dml(10), gtid(11), query("DROP TABLE x"), *dml(12, 3), *dml(13))
    assert [t.gtid for t in txs] == [f"{S}:10", f"{S}:11", f"{S}:12", f"{S}:13"]
    assert txs[0].start == Checkpoint(F1, 4, f"{S}:1-9")
    for before, after in itertools.pairwise(txs):
        assert before.end == after.start
    assert [t.end.pos for t in txs] == [at(5), at(7), at(12), at(17)]
    assert [t.end.gtid_set for t in txs] == [f"{S}:1-{n}" for n in (10, 11, 12, 13)]
    assert all(t.start.gtid_set != t.end.gtid_set for t in txs)


def test_tagged_gtids_grow_the_set() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-3"))
    t1, t2, t3 = feed(gtid(1, tag="batch"), query("BEGIN"), tmap(), rows(), xid(),
                      gtid(4), query("CREATE TABLE a (b INT)"),
                      gtid(2, tag="batch"), query("BEGIN"), tmap(), rows(), xid())
    assert t1.gtid == f"{S}:batch:1" and t1.end.gtid_set == f"{S}:1-3:batch:1"
    assert t2.end.gtid_set == f"{S}:1-4:batch:1"
    assert t3.end.gtid_set == f"{S}:1-4:batch:1-2" and t3.start == t2.end
    assert MysqlGtidSet.parse(t3.end.gtid_set) == MysqlGtidSet.parse(f"{S}:batch:1-2,{S}:1-4")


def test_previous_gtids_seed_the_set_when_the_start_has_none() -> None:
    feed = Feed(Checkpoint(F1, 4))
    (tx,) = feed(fde(), previous(f"{S}:1-10"), *dml(11))
    assert tx.start == Checkpoint(F1, at(2), f"{S}:1-10") and tx.end == Checkpoint(F1, at(7), f"{S}:1-11")
    # An empty PREVIOUS_GTIDS: the set starts with the first GTID; with only anonymous ones it stays None.
    feed = Feed(Checkpoint(F1, 4))
    (t_anon,) = feed(fde(), previous(""), gtid(0), query("BEGIN"), tmap(), rows(), xid())
    assert t_anon.end.gtid_set is None and feed.a.boundary.gtid_set is None
    (t_gtid,) = feed(*dml(1))
    assert t_gtid.start.gtid_set is None and t_gtid.end.gtid_set == f"{S}:1"
    # A start that names the empty set: the first GTID decides the flavor.
    feed = Feed(Checkpoint(F1, 4, ""))
    assert feed.a.boundary.gtid_set == ""
    (tx,) = feed(*dml(1))
    assert (tx.start.gtid_set, tx.end.gtid_set) == ("", f"{S}:1")
    # A known set is joined with PREVIOUS_GTIDS of later files.
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-3"))
    feed(fde(), previous(f"{S}:1-5"))
    assert feed.a.boundary == Checkpoint(F1, at(2), f"{S}:1-5")


def test_transactions_executed_before_the_start_are_skipped_and_counted() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-6"))
    txs = feed(*dml(5), *dml(6), *dml(7))
    assert [t.gtid for t in txs] == [f"{S}:7"] and feed.a.skipped == 2
    assert txs[0].start == Checkpoint(F1, at(10), f"{S}:1-6")


# -- XA ------------------------------------------------------------------------------------------------

X1 = b"X'7831',X'',1"
X2 = b"X'7832',X'6232',7"


def xa_part(gno: int, name: str = "x1", key: tuple[bytes, bytes, int] = (b"x1", b"", 1)) -> list[Any]:
    gtrid, bqual, fmt = key
    text = f"X'{gtrid.hex()}',X'{bqual.hex()}',{fmt}"
    return [gtid(gno), query(f"XA START {text}"), tmap(), rows(), query(f"XA END {text}"),
            xa_prepare(gtrid, bqual, fmt)]


def test_xa_two_phase_commit_emits_the_prepared_events_at_xa_commit() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-5"))
    part = xa_part(6)
    assert feed(*part) == []
    assert feed.a.prepared_xids() == (X1,)
    # While prepared, every checkpoint stays at the XA's start, without the prepared GTID.
    assert feed.a.boundary == Checkpoint(F1, 4, f"{S}:1-5")
    (other,) = feed(*dml(7))
    assert other.start == Checkpoint(F1, 4, f"{S}:1-5") and other.end == Checkpoint(F1, 4, f"{S}:1-5:7")
    (tx,) = feed(gtid(8, commit_us=99), query("XA COMMIT X'7831',X'',1", ts=TS + 5))
    assert (tx.kind, tx.gtid, tx.ts, tx.commit_us) == ("xa_commit", f"{S}:8", TS + 5, 99)
    assert tx.rows_gtid == f"{S}:6"  # the rows are the XA PREPARE's events: they carry its GTID
    assert [e for _f, _p, e in tx.events] == part
    assert [p for _f, p, _e in tx.events] == [at(i) for i in range(6)]
    assert tx.start == Checkpoint(F1, 4, f"{S}:1-5:7")
    assert tx.end == Checkpoint(F1, at(13), f"{S}:1-8") == feed.a.boundary
    assert feed.a.prepared_xids() == ()


def test_xa_rollback_drops_the_prepared_events() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-5"))
    assert feed(*xa_part(6, key=(b"x2", b"b2", 7))) == []
    assert feed.a.prepared_xids() == (X2,)
    assert feed(gtid(7), query("XA ROLLBACK X'7832',X'6232',7")) == []
    assert feed.a.prepared_xids() == () and feed.a.boundary == Checkpoint(F1, at(8), f"{S}:1-7")


def test_xa_one_phase_commits_at_its_xa_prepare() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-5"))
    events = [gtid(6), query("XA START X'7833',X'',1"), tmap(), rows(), query("XA END X'7833',X'',1"),
              xa_prepare(b"x3", one_phase=True)]
    (tx,) = feed(*events)
    assert tx.kind == "xa_one_phase" and [e for _f, _p, e in tx.events] == events
    assert tx.end == Checkpoint(F1, at(6), f"{S}:1-6") and feed.a.prepared_xids() == ()


def test_overlapping_xas_hold_the_boundary_at_the_oldest_prepared_one() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-5"))
    feed(*xa_part(6), *xa_part(7, key=(b"x2", b"b2", 7)))
    assert feed.a.prepared_xids() == (X1, X2)
    assert feed.a.boundary == Checkpoint(F1, 4, f"{S}:1-5")
    (c1,) = feed(gtid(8), query("XA COMMIT 'x1'"))  # the xid as typed is read as well
    assert c1.kind == "xa_commit" and feed.a.prepared_xids() == (X2,)
    assert feed.a.boundary == Checkpoint(F1, at(6), f"{S}:1-6:8")
    (c2,) = feed(gtid(9), query("XA COMMIT 'x2','b2',7"))
    assert c2.end == feed.a.boundary == Checkpoint(F1, at(16), f"{S}:1-9")


def _xa_story() -> list[Any]:
    """XA x1 prepared, two transactions, XA x1 committed, one more transaction."""
    return [*xa_part(6), *dml(7), gtid(8), query("CREATE TABLE z (a INT)"),
            gtid(9), query("XA COMMIT X'7831',X'',1"), *dml(10)]


def test_resume_from_a_held_back_checkpoint_skips_what_was_emitted() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-5"))
    story = _xa_story()
    first = feed(*story[:13])  # crash after the DDL: the checkpoint is the DDL's end
    assert [t.gtid for t in first] == [f"{S}:7", f"{S}:8"]
    saved = first[-1].end
    assert saved == Checkpoint(F1, 4, f"{S}:1-5:7-8")
    again = Feed(saved)  # a new process reads again from the XA's start
    txs = again(*story)
    assert [(t.gtid, t.kind) for t in txs] == [(f"{S}:9", "xa_commit"), (f"{S}:10", "dml")]
    assert again.a.skipped == 2
    assert len(txs[0].events) == 6 and txs[1].end == Checkpoint(F1, at(20), f"{S}:1-10")


def test_mariadb_resume_from_a_held_back_checkpoint_skips_by_sequence_number() -> None:
    story = [maria(6, 0x4C, xa=(1, b"x1", b"")), annotate(), tmap(), rows(), query("XA END X'7831',X'',1"),
             xa_prepare(b"x1"), maria(7), annotate(), tmap(), rows(), xid(),
             maria(8, 0x8D, xa=(1, b"x1", b"")), query("XA COMMIT X'7831',X'',1")]
    feed = Feed(Checkpoint(F1, 4, "0-1-5"))
    (t7,) = feed(*story[:11])
    assert t7.end == Checkpoint(F1, 4, "0-1-7")
    again = Feed(t7.end)
    (commit,) = again(*story)
    assert commit.kind == "xa_commit" and commit.gtid == "0-1-8" and again.a.skipped == 1
    assert commit.rows_gtid == "0-1-6"
    assert commit.end == Checkpoint(F1, at(13), "0-1-8")


def test_reconnect_to_a_held_back_boundary_emits_nothing_twice_even_without_gtids() -> None:
    a = TransactionAssembler(Checkpoint(F1, 4))
    feed = Feed(assembler=a)
    story = [query("XA START X'7831',X'',1"), tmap(), rows(), query("XA END X'7831',X'',1"), xa_prepare(b"x1"),
             query("BEGIN"), tmap(), rows(), xid(), query("BEGIN"), tmap(), rows()]
    (first,) = feed(*story)  # the connection breaks inside the second transaction
    assert first.end == Checkpoint(F1, 4)
    a.cut_off()
    assert a.boundary == Checkpoint(F1, 4)
    again = Feed(a.boundary, assembler=a)
    txs = again(rotate(F1, 4, artificial=True), fde(log_pos=0), *story, xid(), query("XA COMMIT X'7831',X'',1"))
    assert [x.kind for x in txs] == ["dml", "xa_commit"] and a.skipped == 1
    assert txs[0].events[0][1] == at(9) and a.boundary == Checkpoint(F1, at(14))


def test_xa_commit_of_an_xa_prepared_before_the_start_is_data_loss() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-5"))
    with pytest.raises(DataLossError, match=r"XA COMMIT.*before its XA PREPARE"):
        feed(gtid(6), query("XA COMMIT X'7831',X'',1"))
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-5"))
    assert feed(gtid(6), query("XA ROLLBACK X'7831',X'',1")) == []  # nothing to drop
    assert feed.a.boundary == Checkpoint(F1, at(2), f"{S}:1-6")


@pytest.mark.parametrize(
    "text, key",
    [
        ("XA COMMIT X'7831',X'',1", X1),
        ("XA COMMIT 'x1'", X1),
        ("xa   commit  'x1' , '' , 1 ONE PHASE", X1),
        ("XA ROLLBACK 0x7832, 'b2', 7", X2),
        ("XA COMMIT 'it''s','b\\'q',3", xid_key(3, b"it's", b"b'q")),
    ],
)
def test_xa_ids_in_every_written_form(text: str, key: bytes) -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-5"))
    gtrid, bqual, fmt = {X1: (b"x1", b"", 1), X2: (b"x2", b"b2", 7)}.get(key, (b"it's", b"b'q", 3))
    feed(*xa_part(6, key=(gtrid, bqual, fmt)))
    assert feed.a.prepared_xids() == (key,)
    feed(gtid(7), query(text))
    assert feed.a.prepared_xids() == ()


def test_unreadable_xa_id_is_a_protocol_error() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-5"))
    with pytest.raises(ProtocolError, match="XA transaction id"):
        feed(gtid(6), query("XA COMMIT @x"))


# -- MariaDB -------------------------------------------------------------------------------------------


def test_mariadb_standalone_ddl_and_transactional_dml() -> None:
    feed = Feed(Checkpoint(F1, 4, "0-1-10,1-2-7"))
    t1, t2, t3 = feed(maria(11, 0x29), query("CREATE TABLE p.t (id INT)"),
                      maria(12), annotate(), tmap(), rows(2), xid(),
                      maria(8, 0x0C, domain=1, server=3), annotate(), tmap(), rows(), xid())
    assert (t1.kind, t1.gtid, len(t1.events)) == ("ddl", "0-1-11", 2)
    assert t1.end == Checkpoint(F1, at(2), "0-1-11,1-2-7")
    assert (t2.kind, t2.gtid, len(t2.events), t2.commit_us) == ("dml", "0-1-12", 5, None)
    assert t2.start == t1.end and t2.end == Checkpoint(F1, at(7), "0-1-12,1-2-7")
    assert t3.gtid == "1-3-8" and t3.end.gtid_set == "0-1-12,1-3-8"


def test_mariadb_non_transactional_dml_ends_with_commit_and_ddl_flag_marks_ctas() -> None:
    feed = Feed(Checkpoint(F1, 4, "0-1-4"))
    (t1,) = feed(maria(5, 0x08), annotate(), tmap(), rows(), query("COMMIT"))
    assert t1.kind == "dml" and t1.end == Checkpoint(F1, at(5), "0-1-5")
    # CREATE TABLE ... SELECT: FL_DDL without FL_STANDALONE, the CREATE, rows and an XID.
    (t2,) = feed(maria(6, 0x28), query("CREATE TABLE `p`.`c` (`a` int(1) NOT NULL)"), annotate(), tmap(), rows(),
                 xid())
    assert t2.kind == "ddl" and len(t2.events) == 6 and t2.end.gtid_set == "0-1-6"
    # Statement-based DML rolled back: the GTID is consumed, nothing is emitted.
    assert feed(maria(7, 0x08), query("INSERT INTO p.t VALUES (1)"), query("ROLLBACK")) == []
    assert feed.a.boundary == Checkpoint(F1, at(14), "0-1-7")


def test_mariadb_xa_commit_and_rollback() -> None:
    feed = Feed(Checkpoint(F1, 4, "0-1-6"))
    part = [maria(7, 0x4C, xa=(1, b"x1", b"")), annotate(), tmap(), rows(), query("XA END X'7831',X'',1"),
            xa_prepare(b"x1")]
    assert feed(*part) == []
    assert feed.a.prepared_xids() == (X1,) and feed.a.boundary == Checkpoint(F1, 4, "0-1-7")
    (tx,) = feed(maria(8, 0x8D, xa=(1, b"x1", b"")), query("XA COMMIT X'7831',X'',1"))
    assert tx.kind == "xa_commit" and tx.gtid == "0-1-8" and [e for _f, _p, e in tx.events] == part
    assert tx.end == Checkpoint(F1, at(8), "0-1-8")
    feed(maria(9, 0x4C, xa=(7, b"x2", b"b2")), annotate(), tmap(), rows(), query("XA END X'7832',X'6232',7"),
         xa_prepare(b"x2", b"b2", 7))
    assert feed.a.prepared_xids() == (X2,)
    assert feed(maria(10, 0x8D, xa=(7, b"x2", b"b2")), query("XA ROLLBACK X'7832',X'6232',7")) == []
    assert feed.a.prepared_xids() == () and feed.a.boundary == Checkpoint(F1, at(16), "0-1-10")


def test_mariadb_gtid_list_seeds_the_position() -> None:
    feed = Feed(Checkpoint(F1, 4))
    glist = ev.MariadbGtidListEvent(hdr(E.GTID_LIST_EVENT), 0,
                                    (MariadbGtid(0, 2, 9), MariadbGtid(1, 1, 3), MariadbGtid(0, 1, 14)))
    checkpoint = ev.BinlogCheckpointEvent(hdr(E.BINLOG_CHECKPOINT_EVENT), F1)
    (tx,) = feed(fde(), glist, checkpoint, maria(15), annotate(), tmap(), rows(), xid())
    assert tx.start == Checkpoint(F1, at(3), "0-1-14,1-1-3")  # the last entry of a domain is its position
    assert tx.end == Checkpoint(F1, at(8), "0-1-15,1-1-3")


# -- TRANSACTION_PAYLOAD ---------------------------------------------------------------------------------


def test_transaction_payload_holds_begin_to_xid() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-14"))
    body = payload(query("BEGIN"), tmap(), rows(3), tmap(), rows(), xid(ts=TS + 1))
    (tx,) = feed(gtid(15), body)
    assert [e for _f, _p, e in tx.events] == [gtid(15), body]
    assert tx.end == Checkpoint(F1, at(2), f"{S}:1-15") and tx.ts == TS + 1 and tx.kind == "dml"


def test_xa_inside_transaction_payloads() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-5"))
    prepared = payload(query("XA START X'7a',X'',1"), tmap(), rows(), query("XA END X'7a',X'',1"),
                       xa_prepare(b"z"))
    assert feed(gtid(6), prepared) == []
    assert feed.a.prepared_xids() == (b"X'7a',X'',1",)
    (tx,) = feed(gtid(7), query("XA COMMIT X'7a',X'',1"))
    assert tx.kind == "xa_commit" and [e for _f, _p, e in tx.events] == [gtid(6), prepared]


def test_payload_with_events_after_its_commit_is_malformed() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-14"))
    with pytest.raises(ProtocolError, match="TRANSACTION_PAYLOAD"):
        feed(gtid(15), payload(query("BEGIN"), tmap(), rows(), xid(), query("BEGIN")))


# -- cut off, rotate and events outside transactions -------------------------------------------------------


@pytest.mark.parametrize("cut", ["rotate", "fde", "stop", "cut_off"])
def test_cut_off_transactions_are_dropped_and_the_boundary_stays_at_their_start(cut: str) -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-4"))
    (t5,) = feed(*dml(5))
    assert feed(gtid(6), query("BEGIN"), tmap(), rows()) == []
    assert feed.a.in_transaction
    if cut == "cut_off":
        feed.a.cut_off()
    else:
        breaker = {"rotate": rotate(F1, at(5), artificial=True), "fde": fde(log_pos=0),
                   "stop": ev.StopEvent(hdr(E.STOP_EVENT))}[cut]
        assert feed(breaker) == []
    assert not feed.a.in_transaction
    assert feed.a.boundary == t5.end == Checkpoint(F1, at(5), f"{S}:1-5")
    feed.file, feed.pos = F1, at(5)  # the stream resumes at the boundary
    (t6,) = feed(*dml(6))
    assert t6.start == t5.end and t6.end == Checkpoint(F1, at(10), f"{S}:1-6")


def test_rotate_moves_the_boundary_and_server_made_events_do_not() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-5"))
    feed(*dml(6), rotate(F2, 4))
    assert feed.a.boundary == Checkpoint(F2, 4, f"{S}:1-6")
    feed(fde(), previous(f"{S}:1-6"))
    assert feed.a.boundary == Checkpoint(F2, at(2), f"{S}:1-6")
    heartbeat = ev.HeartbeatEvent(hdr(E.HEARTBEAT_LOG_EVENT_V2, log_pos=0), F2, 99_999)
    feed(heartbeat, fde(log_pos=0))
    assert feed.a.boundary == Checkpoint(F2, at(2), f"{S}:1-6")
    feed(ev.IncidentEvent(hdr(E.INCIDENT_EVENT), 1, "LOST_EVENTS"))
    assert feed.a.boundary == Checkpoint(F2, at(3), f"{S}:1-6")
    # A GTID-based start names no file: the server's first (artificial) ROTATE does.
    feed = Feed(Checkpoint("", 4, f"{S}:1-5"))
    feed(rotate(F2, 4, artificial=True))
    assert feed.a.boundary == Checkpoint(F2, 4, f"{S}:1-5")
    (tx,) = feed(fde(), previous(f"{S}:1-2"), *dml(6))
    assert tx.start == Checkpoint(F2, at(2), f"{S}:1-5")


def test_heartbeats_and_control_events_inside_a_transaction_are_not_part_of_it() -> None:
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-4"))
    heartbeat = ev.HeartbeatEvent(hdr(E.HEARTBEAT_LOG_EVENT, log_pos=0), F1, 0)
    (tx,) = feed(gtid(5), query("BEGIN"), tmap(), heartbeat, rows(), xid())
    assert [type(e).__name__ for _f, _p, e in tx.events] == ["GtidEvent", "QueryEvent", "TableMapEvent",
                                                             "RowsEvent", "XidEvent"]


def test_events_that_need_a_transaction_outside_one_are_protocol_errors() -> None:
    for event in (rows(), tmap(), xid(), xa_prepare(b"x")):
        feed = Feed(Checkpoint(F1, 1000))
        with pytest.raises(ProtocolError, match="did not start at a transaction boundary"):
            feed(event)
    feed = Feed(Checkpoint(F1, 4, f"{S}:1-4"))
    with pytest.raises(ProtocolError, match=r"inside the transaction that began at binlog\.000001:4"):
        feed(gtid(5), query("BEGIN"), tmap(), gtid(6))


@pytest.mark.parametrize("bad", ["nonsense", f"{S}:0", "0-1"])
def test_start_with_an_unreadable_gtid_set_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="does not parse"):
        TransactionAssembler(Checkpoint(F1, 4, bad))


def test_gtids_off_resume_after_an_xa_repeats_transactions_documented() -> None:
    """Without GTIDs a new process cannot tell what it emitted after the held-back checkpoint."""
    story = [query("XA START X'7831',X'',1"), tmap(), rows(), query("XA END X'7831',X'',1"), xa_prepare(b"x1"),
             query("BEGIN"), tmap(), rows(), xid()]
    (t,) = Feed()(*story)
    assert t.end == Checkpoint(F1, 4)
    again = Feed(t.end)
    assert [x.kind for x in again(*story)] == ["dml"]  # at least once, as the module docstring says


# -- golden binlogs ----------------------------------------------------------------------------------------

DATA = Path(__file__).resolve().parents[2] / "data"
GOLDEN = sorted(DATA.glob("*.binlog"))


def _assemble(path: Path, start: Checkpoint) -> tuple[list[Transaction], TransactionAssembler]:
    assembler = TransactionAssembler(start)
    out = []
    for offset, event in BinlogFile(path, EventParser(), start=start.pos):
        tx = assembler.feed(path.name, offset, offset + event.header.event_size, event)
        if tx is not None:
            out.append(tx)
    return out, assembler


def _row_keys(tx: Transaction) -> list[tuple[str, int, int]]:
    """``(file, pos, row)`` of every row change, numbered as the change-record contract says."""
    keys = []
    for file, pos, event in tx.events:
        inner = event.events if type(event) is ev.TransactionPayloadEvent else (event,)
        row = 0
        for e in inner:
            if type(e) is ev.RowsEvent:
                for _ in e.rows:
                    keys.append((file, pos, row))
                    row += 1
    return keys


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_row_changes_fall_in_exactly_one_committed_transaction(path: Path) -> None:
    txs, assembler = _assemble(path, Checkpoint(path.name, 4))
    expected = [json.loads(line) for line in path.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines()]
    owner = {}
    for tx in txs:
        assert tx.gtid is not None
        if tx.kind == "ddl":  # the versioned workload creates and alters its tables in its file
            assert path.stem.endswith("-versioned") and not _row_keys(tx)
            continue
        assert tx.kind == "dml"
        for key in _row_keys(tx):
            assert key not in owner, key
            owner[key] = tx
    assert sorted(owner) == sorted((c["file"], c["pos"], c["row"]) for c in expected)
    for change in expected:
        assert owner[(change["file"], change["pos"], change["row"])].gtid == change["gtid"]
    # Boundaries chain from the first transaction to the last, and the file ends on a boundary.
    for before, after in itertools.pairwise(txs):
        assert before.end == after.start
        assert before.end.gtid_set is not None and before.end.gtid_set != before.start.gtid_set
    assert not assembler.in_transaction
    assert assembler.boundary.file != path.name and assembler.boundary.pos == 4  # after the closing ROTATE
    assert assembler.boundary.gtid_set == txs[-1].end.gtid_set


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_resume_at_every_boundary_gives_the_rest(path: Path) -> None:
    txs, _ = _assemble(path, Checkpoint(path.name, 4))

    def shape(t: Transaction) -> tuple[Any, ...]:
        return t.start, t.end, t.gtid, t.kind, [(f, p) for f, p, _e in t.events], t.ts, t.commit_us
    for i, tx in enumerate(txs):
        rest, assembler = _assemble(path, tx.start)
        assert [shape(t) for t in rest] == [shape(t) for t in txs[i:]]
        assert assembler.skipped == 0
    # Read from the start with the final executed set: every transaction was executed already.
    again, assembler = _assemble(path, Checkpoint(path.name, 4, txs[-1].end.gtid_set))
    assert again == [] and assembler.skipped == len(txs)
