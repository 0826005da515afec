"""MariaDB's own fixed-size binary types, UUID, INET4 and INET6, as the text the server prints.

MariaDB logs these types (``Type_handler_fbt``, ``sql/sql_type_fixedbin.h``) as a STRING column of
the binary character set with their byte length in the metadata, so the binlog alone cannot tell
them from BINARY(16) / BINARY(4): the schema (``ColumnInfo.mariadb_type``) does. A value is packed
like a BINARY one, without its trailing zero bytes (``StringPack::pack``), so it is padded back
first. A UUID's bytes are logged in the order it is printed, not in the swapped order InnoDB stores
(``UUID::pack`` converts the record to its in-memory form, ``plugin/type_uuid/sql_type_uuid.h``);
it prints as lower-case 8-4-4-4-12 hex. INET6 prints as ``Inet6::to_string`` does (the code of
MySQL's ``INET6_NTOA``, ``plugin/type_inet/sql_type_inet.cc``): lower-case groups without leading
zeros, the first longest run of zero groups (one group is enough) as ``::``, and an IPv4-compatible
(``::a.b.c.d``) or IPv4-mapped (``::ffff:a.b.c.d``) address with its last 32 bits dotted.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["MARIADB_TYPE_BYTES", "inet4_text", "inet6_text", "mariadb_type_decoder", "uuid_text"]

#: Byte length of each type's value (``FbtImpl::binary_length``).
MARIADB_TYPE_BYTES = {"uuid": 16, "inet4": 4, "inet6": 16}


def uuid_text(raw: bytes) -> str:
    """16 bytes in the order MariaDB logs them -> ``0b8a1c2d-...`` as it prints them."""
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def inet4_text(raw: bytes) -> str:
    """4 bytes in network order -> ``192.0.2.1``."""
    return f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}"


def inet6_text(raw: bytes) -> str:
    """16 bytes in network order -> the server's text of the address (module docstring)."""
    words = [raw[i] << 8 | raw[i + 1] for i in range(0, 16, 2)]
    gap_pos, gap_len = -1, 0
    run_pos, run_len = -1, 0
    for i, w in enumerate(words):
        if w == 0:
            if run_pos < 0:
                run_pos, run_len = i, 0
            run_len += 1
            if run_len > gap_len:  # strictly longer: the first of equal runs wins
                gap_pos, gap_len = run_pos, run_len
        else:
            run_pos = -1
    if gap_pos == 0 and (gap_len == 6 or (gap_len == 5 and words[5] == 0xFFFF)):
        return ("::" if gap_len == 6 else "::ffff:") + inet4_text(raw[12:])
    parts: list[str] = []
    i = 0
    while i < 8:
        if i == gap_pos:
            parts.append("" if i > 0 else ":")  # a leading gap needs its own colon
            i += gap_len
            if i == 8:
                parts.append("")
            continue
        parts.append(f"{words[i]:x}")
        i += 1
    return ":".join(parts)


_TEXT: dict[str, Callable[[bytes], str]] = {"uuid": uuid_text, "inet4": inet4_text, "inet6": inet6_text}


def mariadb_type_decoder(kind: str) -> Callable[[bytes], str]:
    """A function from a logged value of MariaDB type ``kind`` (``uuid``, ``inet4``, ``inet6``) to
    its text; a value longer than the type raises ``ValueError``."""
    size, text = MARIADB_TYPE_BYTES[kind], _TEXT[kind]

    def decode(data: bytes) -> str:
        if len(data) > size:
            raise ValueError(f"a {kind.upper()} value has {size} bytes, the row holds {len(data)}")
        return text(bytes(data).ljust(size, b"\0"))

    return decode
