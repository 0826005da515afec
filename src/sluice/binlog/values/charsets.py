"""Collation ids of MySQL 8.0/9.x and MariaDB 10.x/11.x, and how to turn their bytes into ``str``.

A character column's value in a rows event is the raw bytes of its character set; the TABLE_MAP's
optional metadata (or sluice's schema history) names the column's *collation id*. This module owns
the map collation id -> character set (``COLLATION_CHARSETS``, taken from both servers'
``information_schema.COLLATION_CHARACTER_SET_APPLICABILITY``; the two servers agree on every id
they share) and the map character set -> Python decoder. Single-byte character sets decode through
a 256-entry table built from the closest Python codec plus the exceptions where the server's own
conversion table differs (``latin1`` is cp1252 with the five holes filled as C1 controls, as in
``strings/ctype-latin1.cc``); the exceptions were read off the server with
``CONVERT(CONVERT(byte USING cs) USING utf8mb4)`` for every byte. Character sets Python cannot
decode raise ``UnsupportedError`` naming the character set when a row plan is built.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from functools import cache

from sluice.errors import MalformedEventError, UnsupportedError

__all__ = [
    "BINARY_CHARSET",
    "COLLATION_CHARSETS",
    "CharsetDecodeError",
    "charmap_table",
    "charset_for_collation",
    "decoder_for_charset",
    "python_codec",
]

BINARY_CHARSET = "binary"

# (first id, last id, character set): every collation id either server defines.
_RUNS: tuple[tuple[int, int, str], ...] = (
    (1, 1, "big5"), (2, 2, "latin2"), (3, 3, "dec8"), (4, 4, "cp850"), (5, 5, "latin1"), (6, 6, "hp8"),
    (7, 7, "koi8r"), (8, 8, "latin1"), (9, 9, "latin2"), (10, 10, "swe7"), (11, 11, "ascii"),
    (12, 12, "ujis"), (13, 13, "sjis"), (14, 14, "cp1251"), (15, 15, "latin1"), (16, 16, "hebrew"),
    (18, 18, "tis620"), (19, 19, "euckr"), (20, 20, "latin7"), (21, 21, "latin2"), (22, 22, "koi8u"),
    (23, 23, "cp1251"), (24, 24, "gb2312"), (25, 25, "greek"), (26, 26, "cp1250"), (27, 27, "latin2"),
    (28, 28, "gbk"), (29, 29, "cp1257"), (30, 30, "latin5"), (31, 31, "latin1"), (32, 32, "armscii8"),
    (33, 33, "utf8mb3"), (34, 34, "cp1250"), (35, 35, "ucs2"), (36, 36, "cp866"), (37, 37, "keybcs2"),
    (38, 38, "macce"), (39, 39, "macroman"), (40, 40, "cp852"), (41, 42, "latin7"), (43, 43, "macce"),
    (44, 44, "cp1250"), (45, 46, "utf8mb4"), (47, 49, "latin1"), (50, 52, "cp1251"),
    (53, 53, "macroman"), (54, 55, "utf16"), (56, 56, "utf16le"), (57, 57, "cp1256"), (58, 59, "cp1257"),
    (60, 61, "utf32"), (62, 62, "utf16le"), (63, 63, "binary"), (64, 64, "armscii8"), (65, 65, "ascii"),
    (66, 66, "cp1250"), (67, 67, "cp1256"), (68, 68, "cp866"), (69, 69, "dec8"), (70, 70, "greek"),
    (71, 71, "hebrew"), (72, 72, "hp8"), (73, 73, "keybcs2"), (74, 74, "koi8r"), (75, 75, "koi8u"),
    (76, 76, "utf8mb3"), (77, 77, "latin2"), (78, 78, "latin5"), (79, 79, "latin7"), (80, 80, "cp850"),
    (81, 81, "cp852"), (82, 82, "swe7"), (83, 83, "utf8mb3"), (84, 84, "big5"), (85, 85, "euckr"),
    (86, 86, "gb2312"), (87, 87, "gbk"), (88, 88, "sjis"), (89, 89, "tis620"), (90, 90, "ucs2"),
    (91, 91, "ujis"), (92, 93, "geostd8"), (94, 94, "latin1"), (95, 96, "cp932"), (97, 98, "eucjpms"),
    (99, 99, "cp1250"), (101, 124, "utf16"), (128, 151, "ucs2"), (159, 159, "ucs2"), (160, 183, "utf32"),
    (192, 215, "utf8mb3"), (223, 223, "utf8mb3"), (224, 247, "utf8mb4"), (248, 250, "gb18030"),
    (255, 323, "utf8mb4"), (576, 578, "utf8mb3"), (608, 610, "utf8mb4"), (640, 642, "ucs2"),
    (672, 674, "utf16"), (736, 738, "utf32"), (1025, 1025, "big5"), (1027, 1027, "dec8"),
    (1028, 1028, "cp850"), (1030, 1030, "hp8"), (1031, 1031, "koi8r"), (1032, 1032, "latin1"),
    (1033, 1033, "latin2"), (1034, 1034, "swe7"), (1035, 1035, "ascii"), (1036, 1036, "ujis"),
    (1037, 1037, "sjis"), (1040, 1040, "hebrew"), (1042, 1042, "tis620"), (1043, 1043, "euckr"),
    (1046, 1046, "koi8u"), (1048, 1048, "gb2312"), (1049, 1049, "greek"), (1050, 1050, "cp1250"),
    (1052, 1052, "gbk"), (1054, 1054, "latin5"), (1056, 1056, "armscii8"), (1057, 1057, "utf8mb3"),
    (1059, 1059, "ucs2"), (1060, 1060, "cp866"), (1061, 1061, "keybcs2"), (1062, 1062, "macce"),
    (1063, 1063, "macroman"), (1064, 1064, "cp852"), (1065, 1065, "latin7"), (1067, 1067, "macce"),
    (1069, 1070, "utf8mb4"), (1071, 1071, "latin1"), (1074, 1075, "cp1251"), (1077, 1077, "macroman"),
    (1078, 1079, "utf16"), (1080, 1080, "utf16le"), (1081, 1081, "cp1256"), (1082, 1083, "cp1257"),
    (1084, 1085, "utf32"), (1086, 1086, "utf16le"), (1088, 1088, "armscii8"), (1089, 1089, "ascii"),
    (1090, 1090, "cp1250"), (1091, 1091, "cp1256"), (1092, 1092, "cp866"), (1093, 1093, "dec8"),
    (1094, 1094, "greek"), (1095, 1095, "hebrew"), (1096, 1096, "hp8"), (1097, 1097, "keybcs2"),
    (1098, 1098, "koi8r"), (1099, 1099, "koi8u"), (1101, 1101, "latin2"), (1102, 1102, "latin5"),
    (1103, 1103, "latin7"), (1104, 1104, "cp850"), (1105, 1105, "cp852"), (1106, 1106, "swe7"),
    (1107, 1107, "utf8mb3"), (1108, 1108, "big5"), (1109, 1109, "euckr"), (1110, 1110, "gb2312"),
    (1111, 1111, "gbk"), (1112, 1112, "sjis"), (1113, 1113, "tis620"), (1114, 1114, "ucs2"),
    (1115, 1115, "ujis"), (1116, 1117, "geostd8"), (1119, 1120, "cp932"), (1121, 1122, "eucjpms"),
    (1125, 1125, "utf16"), (1147, 1147, "utf16"), (1152, 1152, "ucs2"), (1174, 1174, "ucs2"),
    (1184, 1184, "utf32"), (1206, 1206, "utf32"), (1216, 1216, "utf8mb3"), (1238, 1238, "utf8mb3"),
    (1248, 1248, "utf8mb4"), (1270, 1270, "utf8mb4"), (2048, 2215, "utf8mb3"), (2232, 2247, "utf8mb3"),
    (2304, 2471, "utf8mb4"), (2488, 2503, "utf8mb4"), (2560, 2727, "ucs2"), (2744, 2759, "ucs2"),
    (2816, 2983, "utf16"), (3000, 3015, "utf16"), (3072, 3239, "utf32"), (3256, 3271, "utf32"),
)

COLLATION_CHARSETS: dict[int, str] = {
    i: cs for lo, hi, cs in _RUNS for i in range(lo, hi + 1)
}

# Character set -> Python codec whose decoding equals the server's (after the table fixes below).
_PY_CODECS: dict[str, str] = {
    "utf8mb3": "utf-8",
    "utf8mb4": "utf-8",
    "utf8": "utf-8",
    "ucs2": "utf-16-be",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
    "ascii": "ascii",
    "latin1": "cp1252",
    "latin2": "iso8859_2",
    "latin5": "iso8859_9",
    "latin7": "iso8859_13",
    "koi8r": "koi8_r",
    "koi8u": "koi8_u",
    "hebrew": "iso8859_8",
    "greek": "iso8859_7",
    "tis620": "tis_620",
    "cp1250": "cp1250",
    "cp1251": "cp1251",
    "cp1256": "cp1256",
    "cp1257": "cp1257",
    "cp850": "cp850",
    "cp852": "cp852",
    "cp866": "cp866",
    "macce": "mac_latin2",
    "macroman": "mac_roman",
    "dec8": "latin_1",
    "hp8": "latin_1",
    "swe7": "ascii",
    "armscii8": "latin_1",
    "geostd8": "latin_1",
    "keybcs2": "cp437",
    "big5": "big5",
    "gbk": "gbk",
    "gb2312": "gb2312",
    "gb18030": "gb18030",
    "sjis": "shift_jis",
    "cp932": "cp932",
    "ujis": "euc_jp",
    "eucjpms": "euc_jp",
    "euckr": "euc_kr",
}

# Single-byte character sets whose server table differs from the Python codec above:
# byte -> code point (None: the server has no character for that byte).
_TABLE_FIXES: dict[str, dict[int, int | None]] = {
    "latin1": {
        0x81: 0x0081, 0x8D: 0x008D, 0x8F: 0x008F, 0x90: 0x0090, 0x9D: 0x009D
    },
    "koi8u": {
        0x95: 0x2022
    },
    "hebrew": {
        0xAF: 0x203E
    },
    "greek": {
        0xA1: 0x02BD, 0xA2: 0x02BC, 0xA4: None, 0xA5: None, 0xAA: None
    },
    "tis620": {
        0xA0: 0xFFFD, 0xDB: 0xFFFD, 0xDC: 0xFFFD, 0xDD: 0xFFFD, 0xDE: 0xFFFD, 0xFC: 0xFFFD, 0xFD:
        0xFFFD, 0xFE: 0xFFFD, 0xFF: 0xFFFD
    },
    "cp1256": {
        0x8A: None, 0x8F: None, 0x98: None, 0x9A: None, 0x9F: None, 0xAA: None, 0xC0: None, 0xFF: None
    },
    "cp866": {
        0xFC: 0x207F, 0xFD: 0x00B2
    },
    "dec8": {
        0xA4: None, 0xA6: None, 0xA8: 0x00A4, 0xAC: None, 0xAD: None, 0xAE: None, 0xAF: None, 0xB4:
        None, 0xB8: None, 0xBE: None, 0xD0: None, 0xD7: 0x0152, 0xDD: 0x0178, 0xDE: None, 0xF0: None,
        0xF7: 0x0153, 0xFD: 0x00FF, 0xFE: None, 0xFF: None
    },
    "hp8": {
        0xA1: 0x00C0, 0xA2: 0x00C2, 0xA3: 0x00C8, 0xA4: 0x00CA, 0xA5: 0x00CB, 0xA6: 0x00CE, 0xA7:
        0x00CF, 0xA8: 0x00B4, 0xA9: 0x02CB, 0xAA: 0x02C6, 0xAB: 0x00A8, 0xAC: 0x02DC, 0xAD: 0x00D9,
        0xAE: 0x00DB, 0xAF: 0x20A4, 0xB0: 0x00AF, 0xB1: 0x00DD, 0xB2: 0x00FD, 0xB3: 0x00B0, 0xB4:
        0x00C7, 0xB5: 0x00E7, 0xB6: 0x00D1, 0xB7: 0x00F1, 0xB8: 0x00A1, 0xB9: 0x00BF, 0xBA: 0x00A4,
        0xBB: 0x00A3, 0xBC: 0x00A5, 0xBD: 0x00A7, 0xBE: 0x0192, 0xBF: 0x00A2, 0xC0: 0x00E2, 0xC1:
        0x00EA, 0xC2: 0x00F4, 0xC3: 0x00FB, 0xC4: 0x00E1, 0xC5: 0x00E9, 0xC6: 0x00F3, 0xC7: 0x00FA,
        0xC8: 0x00E0, 0xC9: 0x00E8, 0xCA: 0x00F2, 0xCB: 0x00F9, 0xCC: 0x00E4, 0xCD: 0x00EB, 0xCE:
        0x00F6, 0xCF: 0x00FC, 0xD0: 0x00C5, 0xD1: 0x00EE, 0xD2: 0x00D8, 0xD3: 0x00C6, 0xD4: 0x00E5,
        0xD5: 0x00ED, 0xD6: 0x00F8, 0xD7: 0x00E6, 0xD8: 0x00C4, 0xD9: 0x00EC, 0xDA: 0x00D6, 0xDB:
        0x00DC, 0xDC: 0x00C9, 0xDD: 0x00EF, 0xDE: 0x00DF, 0xDF: 0x00D4, 0xE0: 0x00C1, 0xE1: 0x00C3,
        0xE2: 0x00E3, 0xE3: 0x00D0, 0xE4: 0x00F0, 0xE5: 0x00CD, 0xE6: 0x00CC, 0xE7: 0x00D3, 0xE8:
        0x00D2, 0xE9: 0x00D5, 0xEA: 0x00F5, 0xEB: 0x0160, 0xEC: 0x0161, 0xED: 0x00DA, 0xEE: 0x0178,
        0xEF: 0x00FF, 0xF0: 0x00DE, 0xF1: 0x00FE, 0xF2: 0x00B7, 0xF3: 0x00B5, 0xF4: 0x00B6, 0xF5:
        0x00BE, 0xF6: 0x2014, 0xF7: 0x00BC, 0xF8: 0x00BD, 0xF9: 0x00AA, 0xFA: 0x00BA, 0xFB: 0x00AB,
        0xFC: 0x25A0, 0xFD: 0x00BB, 0xFE: 0x00B1, 0xFF: None
    },
    "swe7": {
        0x40: 0x00C9, 0x5B: 0x00C4, 0x5C: 0x00D6, 0x5D: 0x00C5, 0x5E: 0x00DC, 0x60: 0x00E9, 0x7B:
        0x00E4, 0x7C: 0x00F6, 0x7D: 0x00E5, 0x7E: 0x00FC, 0x7F: None
    },
    "armscii8": {
        0xA1: 0x2741, 0xA2: 0x00A7, 0xA3: 0x0589, 0xA4: 0x0029, 0xA5: 0x0028, 0xA6: 0x00BB, 0xA7:
        0x00AB, 0xA8: 0x2014, 0xA9: 0x002E, 0xAA: 0x055D, 0xAB: 0x002C, 0xAC: 0x002D, 0xAD: 0x055F,
        0xAE: 0x2026, 0xAF: 0x055C, 0xB0: 0x055B, 0xB1: 0x055E, 0xB2: 0x0531, 0xB3: 0x0561, 0xB4:
        0x0532, 0xB5: 0x0562, 0xB6: 0x0533, 0xB7: 0x0563, 0xB8: 0x0534, 0xB9: 0x0564, 0xBA: 0x0535,
        0xBB: 0x0565, 0xBC: 0x0536, 0xBD: 0x0566, 0xBE: 0x0537, 0xBF: 0x0567, 0xC0: 0x0538, 0xC1:
        0x0568, 0xC2: 0x0539, 0xC3: 0x0569, 0xC4: 0x053A, 0xC5: 0x056A, 0xC6: 0x053B, 0xC7: 0x056B,
        0xC8: 0x053C, 0xC9: 0x056C, 0xCA: 0x053D, 0xCB: 0x056D, 0xCC: 0x053E, 0xCD: 0x056E, 0xCE:
        0x053F, 0xCF: 0x056F, 0xD0: 0x0540, 0xD1: 0x0570, 0xD2: 0x0541, 0xD3: 0x0571, 0xD4: 0x0542,
        0xD5: 0x0572, 0xD6: 0x0543, 0xD7: 0x0573, 0xD8: 0x0544, 0xD9: 0x0574, 0xDA: 0x0545, 0xDB:
        0x0575, 0xDC: 0x0546, 0xDD: 0x0576, 0xDE: 0x0547, 0xDF: 0x0577, 0xE0: 0x0548, 0xE1: 0x0578,
        0xE2: 0x0549, 0xE3: 0x0579, 0xE4: 0x054A, 0xE5: 0x057A, 0xE6: 0x054B, 0xE7: 0x057B, 0xE8:
        0x054C, 0xE9: 0x057C, 0xEA: 0x054D, 0xEB: 0x057D, 0xEC: 0x054E, 0xED: 0x057E, 0xEE: 0x054F,
        0xEF: 0x057F, 0xF0: 0x0550, 0xF1: 0x0580, 0xF2: 0x0551, 0xF3: 0x0581, 0xF4: 0x0552, 0xF5:
        0x0582, 0xF6: 0x0553, 0xF7: 0x0583, 0xF8: 0x0554, 0xF9: 0x0584, 0xFA: 0x0555, 0xFB: 0x0585,
        0xFC: 0x0556, 0xFD: 0x0586, 0xFE: 0x2019, 0xFF: 0x0027
    },
    "geostd8": {
        0x80: 0x20AC, 0x81: None, 0x82: 0x201A, 0x83: None, 0x84: 0x201E, 0x85: 0x2026, 0x86: 0x2020,
        0x87: 0x2021, 0x88: None, 0x89: 0x2030, 0x8A: None, 0x8B: 0x2039, 0x8C: None, 0x8D: None, 0x8E:
        None, 0x8F: None, 0x90: None, 0x91: 0x2018, 0x92: 0x2019, 0x93: 0x201C, 0x94: 0x201D, 0x95:
        0x2022, 0x96: 0x2013, 0x97: 0x2014, 0x98: None, 0x99: None, 0x9A: None, 0x9B: 0x203A, 0x9C:
        None, 0x9D: None, 0x9E: None, 0x9F: None, 0xC0: 0x10D0, 0xC1: 0x10D1, 0xC2: 0x10D2, 0xC3:
        0x10D3, 0xC4: 0x10D4, 0xC5: 0x10D5, 0xC6: 0x10D6, 0xC7: 0x10F1, 0xC8: 0x10D7, 0xC9: 0x10D8,
        0xCA: 0x10D9, 0xCB: 0x10DA, 0xCC: 0x10DB, 0xCD: 0x10DC, 0xCE: 0x10F2, 0xCF: 0x10DD, 0xD0:
        0x10DE, 0xD1: 0x10DF, 0xD2: 0x10E0, 0xD3: 0x10E1, 0xD4: 0x10E2, 0xD5: 0x10F3, 0xD6: 0x10E3,
        0xD7: 0x10E4, 0xD8: 0x10E5, 0xD9: 0x10E6, 0xDA: 0x10E7, 0xDB: 0x10E8, 0xDC: 0x10E9, 0xDD:
        0x10EA, 0xDE: 0x10EB, 0xDF: 0x10EC, 0xE0: 0x10ED, 0xE1: 0x10EE, 0xE2: 0x10F4, 0xE3: 0x10EF,
        0xE4: 0x10F0, 0xE5: 0x10F5, 0xE6: None, 0xE7: None, 0xE8: None, 0xE9: None, 0xEA: None, 0xEB:
        None, 0xEC: None, 0xED: None, 0xEE: None, 0xEF: None, 0xF0: None, 0xF1: None, 0xF2: None, 0xF3:
        None, 0xF4: None, 0xF5: None, 0xF6: None, 0xF7: None, 0xF8: None, 0xF9: None, 0xFA: None, 0xFB:
        None, 0xFC: None, 0xFD: 0x2116, 0xFE: None, 0xFF: None
    },
    "keybcs2": {
        0x80: 0x010C, 0x83: 0x010F, 0x85: 0x010E, 0x86: 0x0164, 0x87: 0x010D, 0x88: 0x011B, 0x89:
        0x011A, 0x8A: 0x0139, 0x8B: 0x00CD, 0x8C: 0x013E, 0x8D: 0x013A, 0x8F: 0x00C1, 0x91: 0x017E,
        0x92: 0x017D, 0x95: 0x00D3, 0x96: 0x016F, 0x97: 0x00DA, 0x98: 0x00FD, 0x9B: 0x0160, 0x9C:
        0x013D, 0x9D: 0x00DD, 0x9E: 0x0158, 0x9F: 0x0165, 0xA4: 0x0148, 0xA5: 0x0147, 0xA6: 0x016E,
        0xA7: 0x00D4, 0xA8: 0x0161, 0xA9: 0x0159, 0xAA: 0x0155, 0xAB: 0x0154
    },
}


class CharsetDecodeError(MalformedEventError):
    """The bytes of a character column are not valid text in the column's character set."""

    def __init__(self, message: str, *, column: str, charset: str) -> None:
        self.column = column
        self.charset = charset
        super().__init__(message)


def charset_for_collation(collation: int) -> str:
    """The character set of a collation id; ``UnsupportedError`` for an id neither server has."""
    try:
        return COLLATION_CHARSETS[collation]
    except KeyError:
        raise UnsupportedError(
            f"collation id {collation} is not a MySQL 8.0/9.x or MariaDB 10.x/11.x collation; "
            "sluice cannot tell which character set its bytes are in"
        ) from None


def python_codec(charset: str) -> str | None:
    """The Python codec name when ``bytes.decode(name)`` decodes exactly like the server, else None.

    ``None`` means: use :func:`decoder_for_charset` (a table-driven decoder).
    """
    if charset in _TABLE_FIXES:
        return None
    return _PY_CODECS.get(charset)


@cache
def _decoding_table(charset: str) -> str:
    base = _PY_CODECS[charset]
    chars = []
    for b in range(256):
        try:
            chars.append(bytes([b]).decode(base))
        except UnicodeDecodeError:
            chars.append("\ufffe")  # charmap_decode: undefined -> error
    for b, cp in _TABLE_FIXES[charset].items():
        chars[b] = "\ufffe" if cp is None else chr(cp)
    return "".join(chars)


def charmap_table(charset: str) -> str | None:
    """The 256-character decoding table of a single-byte character set that has one, else None."""
    return _decoding_table(charset) if charset in _TABLE_FIXES else None


def decoder_for_charset(charset: str) -> Callable[[bytes], str]:
    """A function ``bytes -> str`` decoding exactly as the server does (strict: bad bytes raise).

    Raises ``UnsupportedError`` for a character set sluice cannot decode.
    """
    if charset in _TABLE_FIXES:
        table = _decoding_table(charset)
        charmap_decode = codecs.charmap_decode

        def decode(data: bytes) -> str:
            return charmap_decode(data, "strict", table)[0]

        return decode
    codec = _PY_CODECS.get(charset)
    if codec is None:
        raise UnsupportedError(
            f"character set {charset!r} has no decoder in sluice; map the column to a binary type "
            "or convert the table to utf8mb4"
        )

    def decode_codec(data: bytes) -> str:
        return data.decode(codec)

    return decode_codec
