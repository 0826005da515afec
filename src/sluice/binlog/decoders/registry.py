"""The event-type registry: type code -> decoder function, one module per event family.

A decoder takes ``(header, body, ctx)`` where ``body`` is exactly the event body (checksum
removed) and ``ctx`` the narrow reading state of ``decoders.context.DecodeContext``, and returns
one event dataclass. Types missing here decode to ``UnknownEvent``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice.binlog.constants import EventType as E
from sluice.binlog.decoders import control, gtid_events, payload, query, rows, table_map

Decoder = Callable[..., Any]

DECODERS: dict[int, Decoder] = {
    E.FORMAT_DESCRIPTION_EVENT: control.decode_format_description,
    E.ROTATE_EVENT: control.decode_rotate,
    E.STOP_EVENT: control.decode_stop,
    E.HEARTBEAT_LOG_EVENT: control.decode_heartbeat,
    E.HEARTBEAT_LOG_EVENT_V2: control.decode_heartbeat_v2,
    E.INCIDENT_EVENT: control.decode_incident,
    E.BINLOG_CHECKPOINT_EVENT: control.decode_binlog_checkpoint,
    E.START_ENCRYPTION_EVENT: control.decode_start_encryption,
    E.QUERY_EVENT: query.decode_query,
    E.QUERY_COMPRESSED_EVENT: query.decode_query_compressed,
    E.XID_EVENT: query.decode_xid,
    E.XA_PREPARE_LOG_EVENT: query.decode_xa_prepare,
    E.INTVAR_EVENT: query.decode_intvar,
    E.RAND_EVENT: query.decode_rand,
    E.USER_VAR_EVENT: query.decode_user_var,
    E.ROWS_QUERY_LOG_EVENT: query.decode_rows_query,
    E.ANNOTATE_ROWS_EVENT: query.decode_annotate_rows,
    E.GTID_LOG_EVENT: gtid_events.decode_gtid,
    E.ANONYMOUS_GTID_LOG_EVENT: gtid_events.decode_gtid,
    E.GTID_TAGGED_LOG_EVENT: gtid_events.decode_gtid_tagged,
    E.PREVIOUS_GTIDS_LOG_EVENT: gtid_events.decode_previous_gtids,
    E.GTID_EVENT: gtid_events.decode_mariadb_gtid,
    E.GTID_LIST_EVENT: gtid_events.decode_mariadb_gtid_list,
    E.TABLE_MAP_EVENT: table_map.decode_table_map,
    E.TRANSACTION_PAYLOAD_EVENT: payload.decode_transaction_payload,
    **{code: rows.decode_rows for code in rows.ROWS_TYPES},
}
