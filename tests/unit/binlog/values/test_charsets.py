"""Collation ids -> character sets -> decoders, checked against facts of both servers."""

from __future__ import annotations

import pytest

from sluice.binlog.values.charsets import (
    COLLATION_CHARSETS,
    charset_for_collation,
    decoder_for_charset,
    python_codec,
)
from sluice.errors import UnsupportedError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("collation", "charset"),
    [
        (8, "latin1"), (63, "binary"), (33, "utf8mb3"), (45, "utf8mb4"), (46, "utf8mb4"),
        (255, "utf8mb4"), (309, "utf8mb4"), (323, "utf8mb4"), (248, "gb18030"), (28, "gbk"),
        (35, "ucs2"), (54, "utf16"), (56, "utf16le"), (60, "utf32"), (95, "cp932"), (97, "eucjpms"),
        (76, "utf8mb3"), (224, "utf8mb4"), (192, "utf8mb3"),
        # MariaDB only: nopad and uca1400 collations
        (1057, "utf8mb3"), (2304, "utf8mb4"), (3271, "utf32"),
    ],
)
def test_known_collations(collation: int, charset: str) -> None:
    assert charset_for_collation(collation) == charset


def test_every_charset_has_a_decoder() -> None:
    wide = {"ucs2": "utf-16-be", "utf16": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be"}
    for charset in set(COLLATION_CHARSETS.values()) - {"binary"}:
        decode = decoder_for_charset(charset)
        raw = "abc".encode(wide.get(charset, "ascii"))
        assert decode(raw) == "abc", charset


def test_unknown_collation() -> None:
    with pytest.raises(UnsupportedError, match="collation id 9999"):
        charset_for_collation(9999)


def test_server_tables() -> None:
    # MySQL latin1 is cp1252 with the five undefined bytes as C1 controls
    assert decoder_for_charset("latin1")(b"\x80\x81\x9f") == "\u20ac\x81\u0178"
    assert python_codec("latin1") is None
    assert python_codec("utf8mb4") == "utf-8"
    assert decoder_for_charset("ucs2")(b"\x00a\x00b") == "ab"
    assert decoder_for_charset("utf16le")(b"a\x00") == "a"
    assert decoder_for_charset("utf32")(b"\x00\x01\xf6\x00") == "\U0001f600"
    assert decoder_for_charset("swe7")(b"[") == "\u00c4"  # swe7 has national letters at ASCII punctuation
    assert decoder_for_charset("gb18030")("\u20ac".encode("gb18030")) == "\u20ac"
    with pytest.raises(UnicodeDecodeError):
        decoder_for_charset("ascii")(b"\x80")


def test_unsupported_charset() -> None:
    with pytest.raises(UnsupportedError, match="'klingon'"):
        decoder_for_charset("klingon")
