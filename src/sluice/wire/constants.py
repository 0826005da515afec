"""Numbers of the MySQL client/server protocol, with the server's names.

This module owns the capability flags exchanged in the handshake (including MariaDB's extended
capabilities, which travel in the handshake's filler bytes), the server status bits found in OK and
EOF packets, the command bytes that start every client command, the flags of the binlog dump
commands and the first bytes that tell response packets apart. Sources: ``include/mysql_com.h``
and ``include/my_command.h`` in MySQL, ``include/mysql_com.h`` in MariaDB.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag


class Capability(IntFlag):
    """Client/server capability flags (``CLIENT_*`` in mysql_com.h)."""

    CLIENT_LONG_PASSWORD = 1 << 0  # MariaDB calls this bit CLIENT_MYSQL; clear => extended caps present
    CLIENT_FOUND_ROWS = 1 << 1
    CLIENT_LONG_FLAG = 1 << 2
    CLIENT_CONNECT_WITH_DB = 1 << 3
    CLIENT_NO_SCHEMA = 1 << 4
    CLIENT_COMPRESS = 1 << 5
    CLIENT_ODBC = 1 << 6
    CLIENT_LOCAL_FILES = 1 << 7
    CLIENT_IGNORE_SPACE = 1 << 8
    CLIENT_PROTOCOL_41 = 1 << 9
    CLIENT_INTERACTIVE = 1 << 10
    CLIENT_SSL = 1 << 11
    CLIENT_IGNORE_SIGPIPE = 1 << 12
    CLIENT_TRANSACTIONS = 1 << 13
    CLIENT_RESERVED = 1 << 14
    CLIENT_SECURE_CONNECTION = 1 << 15  # CLIENT_RESERVED2 in newer MySQL sources
    CLIENT_MULTI_STATEMENTS = 1 << 16
    CLIENT_MULTI_RESULTS = 1 << 17
    CLIENT_PS_MULTI_RESULTS = 1 << 18
    CLIENT_PLUGIN_AUTH = 1 << 19
    CLIENT_CONNECT_ATTRS = 1 << 20
    CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA = 1 << 21
    CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS = 1 << 22
    CLIENT_SESSION_TRACK = 1 << 23
    CLIENT_DEPRECATE_EOF = 1 << 24
    CLIENT_OPTIONAL_RESULTSET_METADATA = 1 << 25
    CLIENT_ZSTD_COMPRESSION_ALGORITHM = 1 << 26
    CLIENT_QUERY_ATTRIBUTES = 1 << 27
    MULTI_FACTOR_AUTHENTICATION = 1 << 28
    CLIENT_CAPABILITY_EXTENSION = 1 << 29
    CLIENT_SSL_VERIFY_SERVER_CERT = 1 << 30
    CLIENT_REMEMBER_OPTIONS = 1 << 31
    # MariaDB extended capabilities: the upper 32 bits, sent in the last 4 filler bytes.
    MARIADB_CLIENT_PROGRESS = 1 << 32
    MARIADB_CLIENT_COM_MULTI = 1 << 33
    MARIADB_CLIENT_STMT_BULK_OPERATIONS = 1 << 34
    MARIADB_CLIENT_EXTENDED_METADATA = 1 << 35
    MARIADB_CLIENT_CACHE_METADATA = 1 << 36
    MARIADB_CLIENT_BULK_UNIT_RESULTS = 1 << 37


CLIENT_MYSQL = Capability.CLIENT_LONG_PASSWORD  # MariaDB's name for bit 0

#: What sluice asks for (then intersected with what the server offers). No LOCAL INFILE, no
#: multi-statements, no compression, no session tracking: a replica needs none of them.
CLIENT_BASE_CAPABILITIES = (
    Capability.CLIENT_LONG_PASSWORD
    | Capability.CLIENT_LONG_FLAG
    | Capability.CLIENT_PROTOCOL_41
    | Capability.CLIENT_TRANSACTIONS
    | Capability.CLIENT_SECURE_CONNECTION
    | Capability.CLIENT_PLUGIN_AUTH
    | Capability.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
    | Capability.CLIENT_CONNECT_ATTRS
    | Capability.CLIENT_DEPRECATE_EOF
)


class ServerStatus(IntFlag):
    """Status bits of OK and EOF packets (``SERVER_*`` in mysql_com.h)."""

    SERVER_STATUS_IN_TRANS = 1 << 0
    SERVER_STATUS_AUTOCOMMIT = 1 << 1
    SERVER_MORE_RESULTS_EXISTS = 1 << 3
    SERVER_QUERY_NO_GOOD_INDEX_USED = 1 << 4
    SERVER_QUERY_NO_INDEX_USED = 1 << 5
    SERVER_STATUS_CURSOR_EXISTS = 1 << 6
    SERVER_STATUS_LAST_ROW_SENT = 1 << 7
    SERVER_STATUS_DB_DROPPED = 1 << 8
    SERVER_STATUS_NO_BACKSLASH_ESCAPES = 1 << 9
    SERVER_STATUS_METADATA_CHANGED = 1 << 10
    SERVER_QUERY_WAS_SLOW = 1 << 11
    SERVER_PS_OUT_PARAMS = 1 << 12
    SERVER_STATUS_IN_TRANS_READONLY = 1 << 13
    SERVER_SESSION_STATE_CHANGED = 1 << 14


class Command(IntEnum):
    """First byte of a client command packet (``enum_server_command`` in my_command.h)."""

    COM_SLEEP = 0x00
    COM_QUIT = 0x01
    COM_INIT_DB = 0x02
    COM_QUERY = 0x03
    COM_FIELD_LIST = 0x04
    COM_CREATE_DB = 0x05
    COM_DROP_DB = 0x06
    COM_REFRESH = 0x07
    COM_SHUTDOWN = 0x08
    COM_STATISTICS = 0x09
    COM_PROCESS_INFO = 0x0A
    COM_CONNECT = 0x0B
    COM_PROCESS_KILL = 0x0C
    COM_DEBUG = 0x0D
    COM_PING = 0x0E
    COM_TIME = 0x0F
    COM_DELAYED_INSERT = 0x10
    COM_CHANGE_USER = 0x11
    COM_BINLOG_DUMP = 0x12
    COM_TABLE_DUMP = 0x13
    COM_CONNECT_OUT = 0x14
    COM_REGISTER_SLAVE = 0x15
    COM_STMT_PREPARE = 0x16
    COM_STMT_EXECUTE = 0x17
    COM_STMT_SEND_LONG_DATA = 0x18
    COM_STMT_CLOSE = 0x19
    COM_STMT_RESET = 0x1A
    COM_SET_OPTION = 0x1B
    COM_STMT_FETCH = 0x1C
    COM_DAEMON = 0x1D
    COM_BINLOG_DUMP_GTID = 0x1E
    COM_RESET_CONNECTION = 0x1F


class BinlogDumpFlag(IntFlag):
    """Flags of COM_BINLOG_DUMP / COM_BINLOG_DUMP_GTID (MySQL ``rpl_constants.h``)."""

    BINLOG_DUMP_NON_BLOCK = 1 << 0  # answer with EOF at the end of the log instead of waiting
    BINLOG_THROUGH_POSITION = 1 << 1  # MySQL GTID dump: the position fields are meaningful
    BINLOG_THROUGH_GTID = 1 << 2  # MySQL GTID dump: a GTID set follows


# Module-level names for the flags and commands used most, as the server spells them.
BINLOG_DUMP_NON_BLOCK = BinlogDumpFlag.BINLOG_DUMP_NON_BLOCK
BINLOG_THROUGH_POSITION = BinlogDumpFlag.BINLOG_THROUGH_POSITION
BINLOG_THROUGH_GTID = BinlogDumpFlag.BINLOG_THROUGH_GTID
COM_QUIT = Command.COM_QUIT
COM_QUERY = Command.COM_QUERY
COM_PING = Command.COM_PING
COM_BINLOG_DUMP = Command.COM_BINLOG_DUMP
COM_REGISTER_SLAVE = Command.COM_REGISTER_SLAVE
COM_BINLOG_DUMP_GTID = Command.COM_BINLOG_DUMP_GTID

#: MariaDB reuses bit 1 of COM_BINLOG_DUMP's flags: ask for ANNOTATE_ROWS events (the SQL text).
BINLOG_SEND_ANNOTATE_ROWS_EVENT = 1 << 1

# First byte of a server response payload.
OK_HEADER = 0x00
AUTH_MORE_DATA_HEADER = 0x01
LOCAL_INFILE_HEADER = 0xFB
EOF_HEADER = 0xFE  # also AuthSwitchRequest during authentication
ERR_HEADER = 0xFF

#: Largest payload one packet carries; a longer payload is split, and a payload that is an exact
#: multiple of it is followed by an empty packet.
MAX_PACKET_PAYLOAD = 0xFFFFFF

#: Collation sent in the handshake response: utf8mb4_general_ci, known to every MySQL and MariaDB.
UTF8MB4_GENERAL_CI = 45

__all__ = [
    "AUTH_MORE_DATA_HEADER",
    "BINLOG_DUMP_NON_BLOCK",
    "BINLOG_SEND_ANNOTATE_ROWS_EVENT",
    "BINLOG_THROUGH_GTID",
    "BINLOG_THROUGH_POSITION",
    "CLIENT_BASE_CAPABILITIES",
    "CLIENT_MYSQL",
    "COM_BINLOG_DUMP",
    "COM_BINLOG_DUMP_GTID",
    "COM_PING",
    "COM_QUERY",
    "COM_QUIT",
    "COM_REGISTER_SLAVE",
    "EOF_HEADER",
    "ERR_HEADER",
    "LOCAL_INFILE_HEADER",
    "MAX_PACKET_PAYLOAD",
    "OK_HEADER",
    "UTF8MB4_GENERAL_CI",
    "BinlogDumpFlag",
    "Capability",
    "Command",
    "ServerStatus",
]
