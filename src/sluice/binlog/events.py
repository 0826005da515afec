"""The typed binlog events sluice decodes: one frozen dataclass per event, each with its header.

Every event the parser returns is one of these classes; an event type without a decoder becomes
``UnknownEvent`` carrying its raw body. Field names follow the server source
(libbinlogevents ``control_events.h``, ``statement_events.h``, ``rows_event.h`` and MariaDB's
``sql/log_event.h``). Values are decoded exactly: integers stay integers, server-side strings
(schema, table, file names) are ``str``, statement text is kept as ``bytes`` because its charset
is the client's (``QueryEvent.charset``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.header import EventHeader

RowsKind = Literal["write", "update", "delete"]


@dataclass(frozen=True, slots=True)
class FormatDescriptionEvent:
    """FORMAT_DESCRIPTION_EVENT: the server that wrote the binlog, post-header lengths, checksum."""

    header: EventHeader
    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes  # index i = post-header length of event type i + 1
    checksum_alg: int  # ChecksumAlgorithm value
    is_mariadb: bool
    version: tuple[int, int, int]

    def post_header_length(self, type_code: int) -> int | None:
        """Post-header length the server declared for ``type_code``; None when not declared."""
        i = type_code - 1
        if 0 <= i < len(self.post_header_lengths):
            return self.post_header_lengths[i]
        return None


@dataclass(frozen=True, slots=True)
class RotateEvent:
    """ROTATE_EVENT: the binlog goes on in ``next_file`` at ``position``."""

    header: EventHeader
    position: int
    next_file: str


@dataclass(frozen=True, slots=True)
class StopEvent:
    """STOP_EVENT: the server shut down; nothing more is written to this binlog file."""

    header: EventHeader


@dataclass(frozen=True, slots=True)
class QueryEvent:
    """QUERY_EVENT and MariaDB's QUERY_COMPRESSED_EVENT (``query`` is then already inflated)."""

    header: EventHeader
    thread_id: int
    exec_time: int
    error_code: int
    schema: str
    query: bytes
    flags2: int | None = None
    sql_mode: int | None = None
    catalog: str | None = None
    auto_increment_increment: int | None = None
    auto_increment_offset: int | None = None
    charset: tuple[int, int, int] | None = None  # client charset, collation_connection, collation_server
    time_zone: str | None = None
    lc_time_names: int | None = None
    charset_database: int | None = None
    table_map_for_update: int | None = None
    invoker: tuple[str, str] | None = None  # (user, host)
    updated_db_names: tuple[str, ...] | None = None
    microseconds: int | None = None
    explicit_defaults_for_timestamp: int | None = None
    ddl_xid: int | None = None
    default_collation_for_utf8mb4: int | None = None
    sql_require_primary_key: int | None = None
    default_table_encryption: int | None = None
    # MariaDB
    hrnow: int | None = None
    xid: int | None = None
    gtid_flags3: int | None = None
    sa_seq_no: int | None = None
    character_set_collations: tuple[tuple[int, int], ...] | None = None
    unparsed_status: bytes = b""  # status variables after the first code sluice does not know
    compressed: bool = False

    @property
    def sql(self) -> str:
        """The statement as text (UTF-8; undecodable bytes kept as surrogate escapes)."""
        return self.query.decode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class XidEvent:
    """XID_EVENT: the COMMIT of a transaction of an XA-capable engine (InnoDB)."""

    header: EventHeader
    xid: int


@dataclass(frozen=True, slots=True)
class XaPrepareEvent:
    """XA_PREPARE_LOG_EVENT: ends an ``XA PREPARE`` (or ``XA COMMIT ... ONE PHASE``) group."""

    header: EventHeader
    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes


@dataclass(frozen=True, slots=True)
class IntvarEvent:
    """INTVAR_EVENT: the LAST_INSERT_ID / INSERT_ID value of the next statement-based QUERY."""

    header: EventHeader
    kind: int  # 1 = LAST_INSERT_ID, 2 = INSERT_ID
    value: int


@dataclass(frozen=True, slots=True)
class RandEvent:
    """RAND_EVENT: the RAND() seeds of the next statement-based QUERY."""

    header: EventHeader
    seed1: int
    seed2: int


@dataclass(frozen=True, slots=True)
class UserVarEvent:
    """USER_VAR_EVENT: a user variable (``@name``) the next statement-based QUERY reads."""

    header: EventHeader
    name: str
    is_null: bool
    value_type: int | None = None  # Item_result: 0 STRING, 1 REAL, 2 INT, 4 DECIMAL
    charset: int | None = None
    value: bytes | None = None
    flags: int | None = None  # bit 0: UNSIGNED


@dataclass(frozen=True, slots=True)
class IncidentEvent:
    """INCIDENT_EVENT: the source may have lost changes here (``incident`` 1 = LOST_EVENTS)."""

    header: EventHeader
    incident: int
    message: str


@dataclass(frozen=True, slots=True)
class HeartbeatEvent:
    """HEARTBEAT_LOG_EVENT (position in ``header.log_pos``) and HEARTBEAT_LOG_EVENT_V2."""

    header: EventHeader
    log_file: str
    position: int


@dataclass(frozen=True, slots=True)
class RowsQueryEvent:
    """ROWS_QUERY_LOG_EVENT (``binlog_rows_query_log_events``): the statement of the rows that follow."""

    header: EventHeader
    query: bytes


@dataclass(frozen=True, slots=True)
class AnnotateRowsEvent:
    """MariaDB ANNOTATE_ROWS_EVENT (``binlog_annotate_row_events``): the statement of the rows that follow."""

    header: EventHeader
    query: bytes


@dataclass(frozen=True, slots=True)
class BinlogCheckpointEvent:
    """MariaDB BINLOG_CHECKPOINT_EVENT: the oldest binlog file crash recovery still needs."""

    header: EventHeader
    binlog_file: str


@dataclass(frozen=True, slots=True)
class GtidEvent:
    """MySQL GTID_LOG_EVENT, ANONYMOUS_GTID_LOG_EVENT and GTID_TAGGED_LOG_EVENT."""

    header: EventHeader
    flags: int
    sid: uuid.UUID
    gno: int
    tag: str | None = None
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_timestamp: int | None = None  # microseconds since the epoch
    original_commit_timestamp: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    original_server_version: int | None = None
    commit_group_ticket: int | None = None

    @property
    def commit_flag(self) -> bool:
        """``FLAG_MAY_HAVE_SBR``: the transaction may contain statement-based events."""
        return bool(self.flags & 1)

    @property
    def anonymous(self) -> bool:
        """ANONYMOUS_GTID_LOG_EVENT (gno 0): the transaction has no GTID."""
        return self.gno == 0

    @property
    def gtid(self) -> str | None:
        """``uuid:[tag:]gno``, or None for an anonymous transaction."""
        if self.gno == 0:
            return None
        if self.tag:
            return f"{self.sid}:{self.tag}:{self.gno}"
        return f"{self.sid}:{self.gno}"


@dataclass(frozen=True, slots=True)
class PreviousGtidsEvent:
    """PREVIOUS_GTIDS_LOG_EVENT: the GTIDs of all transactions in the earlier binlog files."""

    header: EventHeader
    gtid_set: Any  # sluice.binlog.gtid.MysqlGtidSet


# MariaDB GTID_EVENT flags2 (sql/log_event.h Gtid_log_event).
FL_STANDALONE = 0x01
FL_GROUP_COMMIT_ID = 0x02
FL_TRANSACTIONAL = 0x04
FL_ALLOW_PARALLEL = 0x08
FL_WAITED = 0x10
FL_DDL = 0x20
FL_PREPARED_XA = 0x40
FL_COMPLETED_XA = 0x80
# flags_extra
FL_EXTRA_MULTI_ENGINE = 0x01
FL_START_ALTER = 0x02
FL_COMMIT_ALTER = 0x04
FL_ROLLBACK_ALTER = 0x08
FL_EXTRA_THREAD_ID = 0x10


@dataclass(frozen=True, slots=True)
class MariadbGtidEvent:
    """MariaDB GTID_EVENT: starts an event group (transaction or standalone statement)."""

    header: EventHeader
    seq_no: int
    domain_id: int
    flags: int
    commit_id: int | None = None
    xa_format_id: int | None = None
    xa_gtrid: bytes | None = None
    xa_bqual: bytes | None = None
    flags_extra: int = 0
    extra_engines: int | None = None
    sa_seq_no: int | None = None
    thread_id: int | None = None

    @property
    def standalone(self) -> bool:
        """No terminating COMMIT/XID follows (DDL or non-transactional statement)."""
        return bool(self.flags & FL_STANDALONE)

    @property
    def gtid(self) -> str:
        """``domain-server-seq``, the server id taken from the header."""
        return f"{self.domain_id}-{self.header.server_id}-{self.seq_no}"


@dataclass(frozen=True, slots=True)
class MariadbGtidListEvent:
    """MariaDB GTID_LIST_EVENT: the binlog state (last GTID per domain and server) at the file start."""

    header: EventHeader
    flags: int
    gtids: tuple[Any, ...]  # tuple[sluice.binlog.gtid.MariadbGtid, ...]


@dataclass(frozen=True, slots=True)
class TableMapEvent:
    """TABLE_MAP_EVENT. ``column_meta`` follows one packing rule per type, from the server's
    ``Field::do_save_field_metadata`` / ``rpl_utility.cc read_field_metadata``:

    * 0 for types without metadata;
    * the single byte for FLOAT, DOUBLE (pack length), BLOB, GEOMETRY, JSON, VECTOR (bytes of the
      length prefix), TIMESTAMP2, DATETIME2, TIME2 (fsp);
    * VARCHAR / VAR_STRING: the little-endian uint16 maximum length in bytes;
    * NEWDECIMAL: ``precision << 8 | scale``;
    * STRING, ENUM, SET: ``first_byte << 8 | second_byte`` as stored (the first byte is the real
      type, with CHAR lengths over 255 folded into its high bits);
    * BIT: ``first_byte << 8 | second_byte`` as stored (bits % 8, then whole bytes).

    ``columns`` folds in the optional metadata block (``binlog_row_metadata=FULL``); anything not
    logged stays None. ``primary_key`` lists ``(column index, prefix length)``, 0 meaning the
    whole column. ``raw`` is the event body, the cache key for compiled row decoders.
    """

    header: EventHeader
    table_id: int
    flags: int
    schema: str
    table: str
    column_count: int
    column_types: tuple[int, ...]
    column_meta: tuple[int, ...]
    nullable: tuple[bool, ...]
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[tuple[int, int], ...] | None
    raw: bytes


@dataclass(frozen=True, slots=True)
class RowsEvent:
    """WRITE/UPDATE/DELETE rows events of every version, PARTIAL_UPDATE_ROWS and MariaDB's
    compressed rows events. ``rows`` holds value tuples (write/delete) or ``(before, after)``
    pairs (update), as decoded by the table's compiled row plan."""

    header: EventHeader
    kind: RowsKind
    table_id: int
    flags: int
    table: TableMapEvent
    columns_present: int
    columns_present_after: int | None
    rows: list[Any]
    partition_id: int | None = None
    source_partition_id: int | None = None
    ndb_info: bytes | None = None

    @property
    def statement_end(self) -> bool:
        """``STMT_END_F``: the last rows event of its statement."""
        return bool(self.flags & 1)


@dataclass(frozen=True, slots=True)
class SkippedRowsEvent:
    """Rows of a table the parser's ``table_filter`` does not capture: never decoded."""

    header: EventHeader
    table_id: int
    schema: str
    table: str


@dataclass(frozen=True, slots=True)
class TransactionPayloadEvent:
    """TRANSACTION_PAYLOAD_EVENT: a whole transaction's events, compressed as one payload."""

    header: EventHeader
    compression_type: int  # 0 = ZSTD, 255 = NONE
    payload_size: int
    uncompressed_size: int | None
    events: tuple[Any, ...]  # the inner events, decoded by the same parser


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event of a type sluice has no decoder for, with its raw body."""

    header: EventHeader
    raw: bytes


Event = (
    FormatDescriptionEvent | RotateEvent | StopEvent | QueryEvent | XidEvent | XaPrepareEvent
    | IntvarEvent | RandEvent | UserVarEvent | IncidentEvent | HeartbeatEvent | RowsQueryEvent
    | AnnotateRowsEvent | BinlogCheckpointEvent | GtidEvent | PreviousGtidsEvent | MariadbGtidEvent
    | MariadbGtidListEvent | TableMapEvent | RowsEvent | SkippedRowsEvent | TransactionPayloadEvent
    | UnknownEvent
)
