"""Declared MySQL column types and their facts: the type families (integers, text and blob
types with their length-prefix widths, character and binary types, geometry), the binlog type
codes' names, and the character-set facts: maximum bytes per character, collation names to ids
(``collation_id``) and the default collation of each character set. The schema model, the DDL
replay, ``map_columns`` (a TABLE_MAP column read back) and ``table_map_fit`` (a tracked definition
checked against a TABLE_MAP) all read them here.
"""

from __future__ import annotations

from sluice.binlog.constants import ColumnType as T
from sluice.binlog.values.charsets import COLLATION_CHARSETS
from sluice.dsn import Flavor

__all__ = [
    "BLOB_TYPES",
    "CHARACTER_TYPES",
    "NUMERIC_TYPES",
    "TEXT_TYPES",
    "charset_of_collation",
    "collation_id",
    "collation_name",
    "default_collation",
    "mbmaxlen",
    "normalize_charset",
    "normalize_collation",
    "sized_blob_type",
    "type_name",
]

INTEGER_TYPES = {"tinyint": T.TINY, "smallint": T.SHORT, "mediumint": T.INT24, "int": T.LONG,
                 "bigint": T.LONGLONG}
NUMERIC_TYPES = frozenset({*INTEGER_TYPES, "decimal", "float", "double"})
#: Text and blob families: type name -> bytes of the length prefix (= the TABLE_MAP metadata).
TEXT_TYPES = {"tinytext": 1, "text": 2, "mediumtext": 3, "longtext": 4}
BLOB_TYPES = {"tinyblob": 1, "blob": 2, "mediumblob": 3, "longblob": 4}
_PACK_MAX = {1: 0xFF, 2: 0xFFFF, 3: 0xFFFFFF, 4: 0xFFFFFFFF}
#: Types whose values are text in a character set (the rest of the string types are binary).
CHARACTER_TYPES = frozenset({"char", "varchar", *TEXT_TYPES, "enum", "set"})
BINARY_TYPES = frozenset({"binary", "varbinary", *BLOB_TYPES})
#: MariaDB's fixed-size binary types (Type_handler_fbt): logged as STRING, values are bytes.
FIXED_BINARY_TYPES = frozenset({"inet4", "inet6", "uuid"})
#: Geometry subtypes, numbered as Field::geometry_type (sql/field.h).
GEOMETRY_TYPES = {"geometry": 0, "point": 1, "linestring": 2, "polygon": 3, "multipoint": 4,
                  "multilinestring": 5, "multipolygon": 6, "geometrycollection": 7}

# Maximum bytes per character (CHARSET_INFO::mbmaxlen); absent: 1.
_MBMAXLEN = {
    "utf8mb4": 4, "utf8mb3": 3, "utf16": 4, "utf16le": 4, "utf32": 4, "ucs2": 2, "big5": 2,
    "gbk": 2, "gb2312": 2, "gb18030": 4, "sjis": 2, "cp932": 2, "ujis": 3, "eucjpms": 3, "euckr": 2,
}

# Default collation of every character set of MySQL 8.0/9.x (information_schema.COLLATIONS,
# IS_DEFAULT = 'Yes'): name and id. MariaDB differs only for utf8mb4 (_MARIADB_DEFAULTS).
_DEFAULTS: dict[str, tuple[str, int]] = {
    "big5": ("big5_chinese_ci", 1), "dec8": ("dec8_swedish_ci", 3), "cp850": ("cp850_general_ci", 4),
    "hp8": ("hp8_english_ci", 6), "koi8r": ("koi8r_general_ci", 7), "latin1": ("latin1_swedish_ci", 8),
    "latin2": ("latin2_general_ci", 9), "swe7": ("swe7_swedish_ci", 10), "ascii": ("ascii_general_ci", 11),
    "ujis": ("ujis_japanese_ci", 12), "sjis": ("sjis_japanese_ci", 13), "hebrew": ("hebrew_general_ci", 16),
    "tis620": ("tis620_thai_ci", 18), "euckr": ("euckr_korean_ci", 19), "koi8u": ("koi8u_general_ci", 22),
    "gb2312": ("gb2312_chinese_ci", 24), "greek": ("greek_general_ci", 25),
    "cp1250": ("cp1250_general_ci", 26), "gbk": ("gbk_chinese_ci", 28), "latin5": ("latin5_turkish_ci", 30),
    "armscii8": ("armscii8_general_ci", 32), "utf8mb3": ("utf8mb3_general_ci", 33),
    "ucs2": ("ucs2_general_ci", 35), "cp866": ("cp866_general_ci", 36),
    "keybcs2": ("keybcs2_general_ci", 37), "macce": ("macce_general_ci", 38),
    "macroman": ("macroman_general_ci", 39), "cp852": ("cp852_general_ci", 40),
    "latin7": ("latin7_general_ci", 41), "cp1251": ("cp1251_general_ci", 51),
    "utf16": ("utf16_general_ci", 54), "utf16le": ("utf16le_general_ci", 56),
    "cp1256": ("cp1256_general_ci", 57), "cp1257": ("cp1257_general_ci", 59),
    "utf32": ("utf32_general_ci", 60), "binary": ("binary", 63), "geostd8": ("geostd8_general_ci", 92),
    "cp932": ("cp932_japanese_ci", 95), "eucjpms": ("eucjpms_japanese_ci", 97),
    "gb18030": ("gb18030_chinese_ci", 248), "utf8mb4": ("utf8mb4_0900_ai_ci", 255),
}
_MARIADB_DEFAULTS = {"utf8mb4": ("utf8mb4_general_ci", 45)}

# Collation ids of the collations columns commonly name, beyond the defaults above.
_COLLATION_IDS: dict[str, int] = {
    **{name: cid for name, cid in _DEFAULTS.values()},
    "utf8mb4_general_ci": 45, "utf8mb4_bin": 46, "utf8mb4_unicode_ci": 224, "utf8mb4_unicode_520_ci": 246,
    "utf8mb4_0900_as_ci": 305, "utf8mb4_0900_as_cs": 278, "utf8mb4_0900_bin": 309,
    "utf8mb3_bin": 83, "utf8mb3_unicode_ci": 192, "utf8mb3_unicode_520_ci": 214,
    "latin1_german1_ci": 5, "latin1_danish_ci": 15, "latin1_german2_ci": 31, "latin1_bin": 47,
    "latin1_general_ci": 48, "latin1_general_cs": 49, "latin1_spanish_ci": 94,
    "latin2_bin": 77, "ascii_bin": 65, "cp1250_bin": 66, "cp1251_bin": 50, "cp1256_bin": 67,
    "cp1257_bin": 58, "ucs2_bin": 90, "utf16_bin": 55, "utf16le_bin": 62, "utf32_bin": 61,
    "big5_bin": 84, "gbk_bin": 87, "gb2312_bin": 86, "sjis_bin": 88, "cp932_bin": 96, "euckr_bin": 85,
    "ujis_bin": 91, "eucjpms_bin": 98, "gb18030_bin": 249,
    "utf8mb4_uca1400_ai_ci": 2304,  # MariaDB 11.x's default for utf8mb4
}
_COLLATION_NAMES = {cid: name for name, cid in _COLLATION_IDS.items()}
_CHARSETS_BY_LENGTH = sorted({*COLLATION_CHARSETS.values(), "utf8"}, key=len, reverse=True)


def normalize_charset(name: str | None) -> str | None:
    """Lower-case character set name; ``utf8`` is ``utf8mb3`` (as both servers now report it)."""
    if name is None:
        return None
    name = name.strip().lower()
    return "utf8mb3" if name == "utf8" else name


def normalize_collation(name: str | None) -> str | None:
    """Lower-case collation name; ``utf8_*`` collations are ``utf8mb3_*``."""
    if name is None:
        return None
    name = name.strip().lower()
    return "utf8mb3_" + name[5:] if name.startswith("utf8_") else name


def charset_of_collation(collation: str | None) -> str | None:
    """The character set a collation name belongs to (its name prefix), or None if unknown."""
    collation = normalize_collation(collation)
    if not collation:
        return None
    if collation == "binary":
        return "binary"
    for cs in _CHARSETS_BY_LENGTH:
        if collation.startswith(cs + "_"):
            return normalize_charset(cs)
    return None


def mbmaxlen(charset: str | None) -> int | None:
    """Maximum bytes per character of a character set; None for an unknown or missing one."""
    if charset is None:
        return None
    if charset not in _DEFAULTS:
        return None
    return _MBMAXLEN.get(charset, 1)


def default_collation(charset: str | None, flavor: str | None = None) -> str | None:
    """The compiled-in default collation name of a character set on MySQL or MariaDB."""
    charset = normalize_charset(charset)
    if charset is None:
        return None
    entry = (_MARIADB_DEFAULTS.get(charset) if flavor == Flavor.MARIADB else None) or _DEFAULTS.get(charset)
    return entry[0] if entry else None


def collation_id(charset: str | None, collation: str | None) -> int | None:
    """A collation id for decoding a column: the exact id of a known collation name, else the id of
    the default collation of the character set (named, or implied by the collation's name prefix);
    None when neither is known. Any collation of the right character set decodes the same bytes."""
    collation = normalize_collation(collation)
    if collation is not None:
        cid = _COLLATION_IDS.get(collation)
        if cid is not None:
            return cid
    charset = normalize_charset(charset) or charset_of_collation(collation)
    if charset is None:
        return None
    entry = _DEFAULTS.get(charset)
    return entry[1] if entry else None


def collation_name(cid: int | None) -> str | None:
    """The name of a collation id when this module knows it."""
    return None if cid is None else _COLLATION_NAMES.get(cid)


def sized_blob_type(nbytes: int, text: bool) -> str:
    """The smallest TEXT (or BLOB) type holding ``nbytes`` bytes, as the server picks for
    ``TEXT(n)`` / ``BLOB(n)`` and for CONVERT TO CHARACTER SET."""
    family = TEXT_TYPES if text else BLOB_TYPES
    for name, pack in family.items():
        if nbytes <= _PACK_MAX[pack]:
            return name
    return next(reversed(family))


def blob_max_bytes(data_type: str) -> int | None:
    """Largest value in bytes of a TEXT / BLOB type (``mediumtext``...); None for other types."""
    pack = TEXT_TYPES.get(data_type) or BLOB_TYPES.get(data_type)
    return _PACK_MAX[pack] if pack else None


def type_name(code: int) -> str:
    """The server's name of a binlog type code (``ColumnType``), or ``type N`` for a code it has none for."""
    try:
        return T(code).name
    except ValueError:
        return f"type {code}"
