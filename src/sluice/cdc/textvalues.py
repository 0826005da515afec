"""Values of the MySQL text protocol -> the decoded values sluice's binlog row decoders produce.

A ``SELECT`` answered over the text protocol (``sluice.wire.resultset``) gives every non-NULL
value as text: numbers and temporal values as the server prints them, character columns converted
to the connection's utf8mb4, and binary columns (BINARY, BLOB, BIT, GEOMETRY, VECTOR) as their raw
bytes, kept in the ``str`` as surrogate escapes. ``text_converter`` turns one column's text back
into exactly what ``sluice.binlog.rowplan`` decodes from a row image of the same column (int, the
float32 value of a FLOAT, ``Decimal`` with the column's scale, sluice's temporal text with
TIMESTAMP as a UTC ``...Z`` instant, ``bytes``, a tuple of SET members, the parsed JSON document,
``Geometry``, a tuple of VECTOR floats, BIT as int, MariaDB's INET4 / INET6 / UUID as the text the
binlog decoder makes of their bytes). It is decided once per column from its ``ColumnDef``;
``row_converter`` compiles a whole table's converters into one function per row, with no per-value
type tests. Two things the text must be read under: the session time zone ``'+00:00'`` (TIMESTAMP is printed in it), and
``select_list``, which selects a FLOAT as ``CAST(... AS DOUBLE)`` because both servers print FLOAT
with only six significant digits. One value the text cannot tell apart: a number inside a MySQL
JSON document is a double or a DECIMAL in the binary JSON but prints the same; ``json_number``
keeps the server's digits for a DECIMAL and yields a float for a double, so the JSON text sluice
writes for the document is the same either way.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from ipaddress import AddressValueError, IPv4Address, IPv6Address
from typing import Any

from sluice.binlog.column_info import BINARY_COLLATION
from sluice.binlog.values.geometry import decode_geometry, decode_vector
from sluice.binlog.values.json_binary import JsonDecimal
from sluice.binlog.values.mariadb_types import inet4_text, inet6_text, uuid_text
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.schema.typemap import BINARY_TYPES, BLOB_TYPES, GEOMETRY_TYPES, INTEGER_TYPES, TEXT_TYPES
from sluice.codegen import define
from sluice.dsn import Flavor
from sluice.errors import SchemaError

__all__ = [
    "TextConverter",
    "convert_rows",
    "json_number",
    "row_converter",
    "select_expression",
    "select_list",
    "text_converter",
    "text_converters",
]

#: A column's converter: the non-NULL text of one value -> its decoded value. ``None`` in a list of
#: converters means "the text itself" (DATE, DATETIME, TIME, character columns, ENUM).
TextConverter = Callable[[str], Any]

_F32 = struct.Struct("<f")
_pack_f32, _unpack_f32 = _F32.pack, _F32.unpack


def _bytes(text: str) -> bytes:
    """The raw bytes of a binary value (the result set decoder keeps non-UTF-8 bytes as escapes)."""
    return text.encode("utf-8", "surrogateescape")


def _float32(text: str) -> float:
    return _unpack_f32(_pack_f32(float(text)))[0]


def _decimal(text: str) -> Decimal:
    value = Decimal(text)
    if text[0] == "-" and not value:  # the decoder never signs a zero
        return value.copy_abs()
    return value


def _timestamp(text: str) -> str:
    """``YYYY-MM-DD HH:MM:SS[.f]`` printed in time zone +00:00 -> ``YYYY-MM-DDTHH:MM:SS[.f]Z``; the
    zero timestamp stays as printed (``0000-00-00 00:00:00[.000]``), as the decoder writes it."""
    if text[0] == "0" and text.startswith("0000-00-00"):
        return text
    return f"{text[:10]}T{text[11:]}Z"


def _set(text: str) -> tuple[str, ...]:
    # SET members cannot contain a comma; the server prints them in definition order.
    return tuple(text.split(",")) if text else ()


def _bit(text: str) -> int:
    return int.from_bytes(_bytes(text), "big")


def _geometry(text: str) -> Any:
    return decode_geometry(_bytes(text))


def _vector(text: str) -> tuple[float, ...]:
    return decode_vector(_bytes(text))


def _inet4(text: str) -> str:
    return inet4_text(IPv4Address(text).packed)


def _inet6(text: str) -> str:
    return inet6_text(IPv6Address(text).packed)


def _uuid(text: str) -> str:
    # MariaDB logs a UUID's 16 bytes in the order it prints them (UUID::pack, sql_type_uuid.h).
    raw = bytes.fromhex(text.replace("-", ""))
    if len(raw) != 16:
        raise ValueError(f"a UUID has 16 bytes, found {len(raw)}")
    return uuid_text(raw)


def json_number(text: str) -> float | JsonDecimal:
    """A non-integer number of a MySQL JSON document, printed by the server.

    The server prints a double with its shortest digits (``0.1``, ``1e300``, ``0.0000001``,
    ``100.0``) and a DECIMAL with all digits of its scale (``1.50``). A number whose text is a
    double's is that double; any other is a ``JsonDecimal`` keeping the printed digits. A DECIMAL
    that looks like a double (``1.5``) becomes the double, whose JSON text is the same.
    """
    value = float(text)
    if "e" in text or "E" in text:
        return value  # DECIMALs never print with an exponent
    shortest = repr(value)
    if shortest == text:
        return value
    if "e" in shortest and (text[-1] != "0" or text.endswith(".0")) and Decimal(shortest) == Decimal(text):
        return value  # a double written out in full (``.0`` marks an integral one) where Python uses an exponent
    return JsonDecimal(text)


_json_loads = json.JSONDecoder(parse_float=json_number).decode


def _json(text: str) -> Any:
    return _json_loads(text)


# Types whose decoded value is the text itself.
_VERBATIM = frozenset({"date", "datetime", "time", "char", "varchar", *TEXT_TYPES})


def text_converter(column: ColumnDef, flavor: str | None = None) -> TextConverter | None:
    """The converter of one column's text (None: the text is the value), for a server of ``flavor``
    ("mysql", "mariadb"; None: MySQL). Raises ``SchemaError`` for a type sluice does not decode."""
    dt = column.data_type
    if dt in INTEGER_TYPES or dt == "year":
        return int
    if dt == "float":
        return _float32
    if dt == "double":
        return float
    if dt == "decimal":
        return _decimal
    if dt == "timestamp":
        return _timestamp
    if dt in _VERBATIM:
        collation = column.column_info().collation
        if collation == BINARY_COLLATION or (collation is None and dt in TEXT_TYPES):
            return _bytes  # the decoder's bytes: binary charset, or a TEXT of unknown collation
        return None
    if dt == "enum":  # the member's text, as the decoder looks it up (also in a binary charset)
        if column.enum_values is None:
            raise _unknown_members(column)
        return None
    if dt == "set":
        if column.set_values is None:
            raise _unknown_members(column)
        return _set
    if dt in BINARY_TYPES or dt in BLOB_TYPES:
        return _bytes
    if dt == "bit":
        return _bit
    if dt == "json":
        return None if flavor == Flavor.MARIADB else _json  # MariaDB's JSON is a LONGTEXT
    if dt in GEOMETRY_TYPES:
        return _geometry
    if dt == "vector":
        return _vector  # raw float32s in the text protocol; MariaDB's binlog has them as a VARBINARY
    if dt == "inet4":
        return _inet4
    if dt == "inet6":
        return _inet6
    if dt == "uuid":
        return _uuid
    if dt == "null":
        return _null
    raise SchemaError(
        f"column `{column.name}` is declared {column.sql_type()}, a type sluice cannot read from the text "
        "protocol; exclude the table, or correct the tracked schema if the type is wrong"
    )


def _null(text: str) -> None:
    return None


def _unknown_members(column: ColumnDef) -> SchemaError:
    return SchemaError(
        f"column `{column.name}` is an {column.data_type.upper()} whose members sluice does not know; read the "
        "table's schema from the server (information_schema) so that its members are known"
    )


def text_converters(schema: TableSchema, flavor: str | None = None) -> tuple[TextConverter | None, ...]:
    """One converter per column of ``schema``, in column order (None: the text is the value)."""
    out = []
    for column in schema.columns:
        try:
            out.append(text_converter(column, flavor))
        except SchemaError as exc:
            raise SchemaError(f"{schema.db}.{schema.name}: {exc}") from None
    return tuple(out)


def row_converter(converters: Sequence[TextConverter | None]) -> Callable[[Sequence[str | None]], tuple[Any, ...]]:
    """One function turning a text row (a tuple with None for NULL) into a tuple of decoded values.

    The function is generated straight-line code: per column either the text itself or its
    converter, no loop and no type test per value. It raises ``ValueError`` (or another error of
    the converter) for a text that is not a value of its column; ``convert_rows`` says where.
    """
    names: dict[str, Any] = {}
    parts = []
    for i, conv in enumerate(converters):
        if conv is None:
            parts.append(f"row[{i}]")
        else:
            names[f"_c{i}"] = conv
            parts.append(f"(None if row[{i}] is None else _c{i}(row[{i}]))")
    body = ", ".join(parts) + ("," if len(parts) == 1 else "")
    source = f"def convert(row):\n    return ({body})\n"
    fn: Callable[[Sequence[str | None]], tuple[Any, ...]] = define(source, "convert", names, "text row")
    return fn


_VALUE_ERRORS = (ValueError, TypeError, ArithmeticError, InvalidOperation, AddressValueError, struct.error,
                 OverflowError)


def convert_rows(schema: TableSchema, converters: Sequence[TextConverter | None],
                 rows: Sequence[Sequence[str | None]],
                 convert: Callable[[Sequence[str | None]], tuple[Any, ...]] | None = None) -> list[tuple[Any, ...]]:
    """``rows`` of ``schema`` converted; ``SchemaError`` naming the table, column and text of a value
    that is not what its column's type prints (the schema read does not match the table)."""
    if convert is None:
        convert = row_converter(converters)
    try:
        return [convert(row) for row in rows]
    except _VALUE_ERRORS:
        pass
    for row in rows:  # find the bad value and say which
        for column, conv, text in zip(schema.columns, converters, row, strict=True):
            if conv is None or text is None:
                continue
            try:
                conv(text)
            except _VALUE_ERRORS as exc:
                raise SchemaError(
                    f"{schema.db}.{schema.name}, column `{column.name}` ({column.sql_type()}): the server sent "
                    f"{text!r:.120}, which is not a value of that type ({exc}); the schema sluice read does not "
                    "match the table — read it again"
                ) from exc
    raise SchemaError(f"{schema.db}.{schema.name}: a row could not be converted, but no single value fails")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def select_expression(column: ColumnDef) -> str:
    """The SQL that selects ``column`` as text its converter reads losslessly: the quoted name, or
    ``CAST(`c` AS DOUBLE)`` for a FLOAT (printed as a FLOAT it keeps only six digits)."""
    name = _quote(column.name)
    if column.data_type == "float":
        return f"CAST({name} AS DOUBLE)"
    return name


def select_list(schema: TableSchema) -> str:
    """Every column of ``schema`` (INVISIBLE ones too, which ``SELECT *`` leaves out), in order."""
    return ", ".join(select_expression(c) for c in schema.columns)
