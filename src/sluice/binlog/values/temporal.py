"""Temporal column values: DATE, TIME, DATETIME, TIMESTAMP (old and fractional formats) and YEAR.

Formats follow ``sql-common/my_time.cc`` / ``mysys/my_time.cc`` (``my_datetime_packed_from_binary``,
``my_time_packed_from_binary``, ``my_timestamp_from_binary``) and ``sql/field.cc`` for the old
pre-5.6 types. Every decoder is ``(buf, pos) -> str`` for a fixed byte width known from the TABLE_MAP
and returns the text sluice emits:

* DATE ``YYYY-MM-DD`` (zero and partial dates verbatim, ``0000-00-00``, ``2024-00-15``);
* DATETIME ``YYYY-MM-DD HH:MM:SS`` plus ``.`` and exactly fsp digits when fsp > 0;
* TIMESTAMP the UTC instant ``YYYY-MM-DDTHH:MM:SS[.f]Z``; the zero timestamp (0 seconds) is
  ``0000-00-00 00:00:00`` followed by ``.`` and fsp zeros when fsp > 0, as the server prints it;
* TIME ``[-]HH:MM:SS[.f]`` with hours up to 838.

Values a server cannot write (fraction beyond 999999, negative DATETIME) raise ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from time import gmtime

__all__ = [
    "date_decoder",
    "datetime2_decoder",
    "datetime2_size",
    "datetime_decoder",
    "format_datetime_packed",
    "format_time_packed",
    "time2_decoder",
    "time2_size",
    "time_decoder",
    "timestamp2_decoder",
    "timestamp2_size",
    "timestamp_decoder",
]

Decoder = Callable[[bytes, int], str]

DATETIMEF_INT_OFS = 0x8000000000
TIMEF_INT_OFS = 0x800000
TIMEF_OFS = 0x800000000000

_FRAC_BYTES = (0, 1, 1, 2, 2, 3, 3)

# Text of numbers, looked up instead of formatted: two digits for 0..1023 (hours of a TIME reach
# 838) and four-digit years. An out-of-range index raises IndexError, i.e. a malformed value.
_D2 = tuple(f"{i:02d}" for i in range(1024))
_Y4 = tuple(f"{i:04d}" for i in range(10000))


@cache
def _frac_table(nbytes: int, fsp: int) -> tuple[str, ...]:
    """'.' and fsp digits for each stored fraction of a 1- or 2-byte fraction field."""
    digits = 2 * nbytes
    return tuple("." + f"{i:0{digits}d}"[:fsp] for i in range(10**digits))


def _check_fsp(fsp: int) -> None:
    if not 0 <= fsp <= 6:
        raise ValueError(f"fractional seconds precision {fsp} is not in 0..6")


def datetime2_size(fsp: int) -> int:
    """Bytes of a DATETIME2 value of fractional precision ``fsp``."""
    _check_fsp(fsp)
    return 5 + _FRAC_BYTES[fsp]


def timestamp2_size(fsp: int) -> int:
    """Bytes of a TIMESTAMP2 value of fractional precision ``fsp``."""
    _check_fsp(fsp)
    return 4 + _FRAC_BYTES[fsp]


def time2_size(fsp: int) -> int:
    """Bytes of a TIME2 value of fractional precision ``fsp``."""
    _check_fsp(fsp)
    return 3 + _FRAC_BYTES[fsp]


def _frac_reader(fsp: int, offset: int) -> Callable[[bytes, int], int]:
    """Microseconds stored after the integer part; ValueError when out of range."""
    nbytes = _FRAC_BYTES[fsp]
    unit = (0, 10000, 100, 1)[nbytes]
    limit = (0, 100, 10000, 1000000)[nbytes]

    def frac(buf: bytes, pos: int) -> int:
        p = pos + offset
        raw = buf[p : p + nbytes]
        if len(raw) != nbytes:
            raise ValueError("fractional seconds cut short")
        f = int.from_bytes(raw, "big")
        if f >= limit:
            raise ValueError(f"fractional seconds {f} out of range for fsp {fsp}")
        return f * unit

    return frac


def date_decoder() -> Decoder:
    """DATE / NEWDATE: 3 bytes little-endian, ``year << 9 | month << 5 | day``."""

    def decode(buf: bytes, pos: int) -> str:
        v = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
        return f"{_Y4[v >> 9]}-{_D2[v >> 5 & 15]}-{_D2[v & 31]}"

    return decode


def _ymdhms(intpart: int) -> str:
    ymd = intpart >> 17
    ym = ymd >> 5
    hms = intpart & 0x1FFFF
    if ym > 9999 * 13 + 12:
        raise ValueError(f"DATETIME year {ym // 13} out of range")
    return (
        f"{ym // 13:04d}-{ym % 13:02d}-{ymd & 31:02d} "
        f"{hms >> 12:02d}:{(hms >> 6) & 63:02d}:{hms & 63:02d}"
    )


def datetime2_decoder(fsp: int) -> Decoder:
    """DATETIME(fsp) in the 5.6 format: 5 bytes big-endian + (fsp+1)//2 bytes of fraction."""
    _check_fsp(fsp)
    nfrac = _FRAC_BYTES[fsp]
    from_bytes = int.from_bytes
    y4, d2 = _Y4, _D2
    if nfrac == 3:
        frac = _frac_reader(fsp, 5)
    table = _frac_table(nfrac, fsp) if nfrac in (1, 2) else ()

    def decode(buf: bytes, pos: int) -> str:
        v = from_bytes(buf[pos : pos + 5], "big") - DATETIMEF_INT_OFS
        if v < 0:
            raise ValueError(f"negative DATETIME value {v}")
        ymd = v >> 17
        ym = ymd >> 5
        hms = v & 0x1FFFF
        text = (
            f"{y4[ym // 13]}-{d2[ym % 13]}-{d2[ymd & 31]} "
            f"{d2[hms >> 12]}:{d2[hms >> 6 & 63]}:{d2[hms & 63]}"
        )
        if nfrac == 0:
            return text
        if nfrac == 1:
            return text + table[buf[pos + 5]]
        if nfrac == 2:
            return text + table[buf[pos + 5] << 8 | buf[pos + 6]]
        return f"{text}.{frac(buf, pos):06d}"[: 20 + fsp]

    if nfrac != 3:
        return decode
    general = decode
    cut = 20 + fsp

    def decode_usec(buf: bytes, pos: int) -> str:
        # DATETIME(5|6): integer part and microseconds in one 8-byte read; anything unusual
        # (cut short, negative, fraction out of range) goes to the general decoder, which says why.
        raw = buf[pos : pos + 8]
        w = from_bytes(raw, "big")
        v = (w >> 24) - DATETIMEF_INT_OFS
        usec = w & 0xFFFFFF
        if v < 0 or usec > 999999 or len(raw) != 8:
            return general(buf, pos)
        ymd = v >> 17
        ym = ymd >> 5
        hms = v & 0x1FFFF
        return (
            f"{y4[ym // 13]}-{d2[ym % 13]}-{d2[ymd & 31]} "
            f"{d2[hms >> 12]}:{d2[hms >> 6 & 63]}:{d2[hms & 63]}.{usec:06d}"
        )[:cut]

    return decode_usec


def timestamp2_decoder(fsp: int) -> Decoder:
    """TIMESTAMP(fsp) in the 5.6 format: 4 bytes big-endian seconds + fraction, as UTC."""
    _check_fsp(fsp)
    nfrac = _FRAC_BYTES[fsp]
    zero = "0000-00-00 00:00:00" + ("." + "0" * fsp if fsp else "")
    y4, d2 = _Y4, _D2
    if nfrac == 3:
        frac = _frac_reader(fsp, 4)
    table = _frac_table(nfrac, fsp) if nfrac in (1, 2) else ()

    last = (-1, "")

    def decode(buf: bytes, pos: int) -> str:
        sec = buf[pos] << 24 | buf[pos + 1] << 16 | buf[pos + 2] << 8 | buf[pos + 3]
        if nfrac == 0:
            f = ""
        elif nfrac == 1:
            f = table[buf[pos + 4]]
        elif nfrac == 2:
            f = table[buf[pos + 4] << 8 | buf[pos + 5]]
        else:
            f = f".{frac(buf, pos):06d}"[: 1 + fsp]
        if not sec:
            return zero
        nonlocal last
        days, rem = divmod(sec, 86400)
        last_days, date = last  # rows of one event are mostly from the same day
        if days != last_days:
            t = gmtime(sec)
            date = f"{y4[t[0]]}-{d2[t[1]]}-{d2[t[2]]}T"
            last = (days, date)
        return f"{date}{d2[rem // 3600]}:{d2[rem // 60 % 60]}:{d2[rem % 60]}{f}Z"

    return decode


def format_time_packed(packed: int, fsp: int) -> str:
    """Text of a TIME in the server's packed ``longlong`` form (``hms << 24 | usec``, signed)."""
    sign = ""
    if packed < 0:
        sign = "-"
        packed = -packed
    hms = packed >> 24
    usec = packed & 0xFFFFFF
    if usec > 999999:
        raise ValueError(f"TIME microseconds {usec} out of range")
    text = f"{sign}{(hms >> 12) & 0x3FF:02d}:{(hms >> 6) & 63:02d}:{hms & 63:02d}"
    if fsp:
        return f"{text}.{usec:06d}"[: len(text) + 1 + fsp]
    return text


def format_datetime_packed(packed: int, fsp: int) -> str:
    """Text of a DATETIME in the server's packed ``longlong`` form (``ymdhms << 24 | usec``)."""
    if packed < 0:
        packed = -packed
    usec = packed & 0xFFFFFF
    if usec > 999999:
        raise ValueError(f"DATETIME microseconds {usec} out of range")
    text = _ymdhms(packed >> 24)
    if fsp:
        return f"{text}.{usec:06d}"[: 20 + fsp]
    return text


def time2_decoder(fsp: int) -> Decoder:
    """TIME(fsp) in the 5.6 format: 3 bytes big-endian (offset 0x800000) + fraction, or 6 bytes."""
    _check_fsp(fsp)
    nfrac = _FRAC_BYTES[fsp]
    d2 = _D2

    def decode(buf: bytes, pos: int) -> str:
        if nfrac == 0:
            v = (buf[pos] << 16 | buf[pos + 1] << 8 | buf[pos + 2]) - TIMEF_INT_OFS
            if v >= 0:
                return f"{d2[v >> 12 & 0x3FF]}:{d2[v >> 6 & 63]}:{d2[v & 63]}"
        raw = buf[pos : pos + 3 + nfrac]
        if len(raw) != 3 + nfrac:
            raise ValueError("TIME value cut short")
        if nfrac == 3:
            packed = int.from_bytes(raw, "big") - TIMEF_OFS
        else:
            intpart = (raw[0] << 16 | raw[1] << 8 | raw[2]) - TIMEF_INT_OFS
            if nfrac == 0:
                packed = intpart << 24
            elif nfrac == 1:
                f = raw[3]
                if intpart < 0 and f:
                    intpart += 1
                    f -= 0x100
                if not -100 < f < 100:
                    raise ValueError(f"TIME fraction byte {raw[3]} out of range")
                packed = (intpart << 24) + f * 10000
            else:
                f = raw[3] << 8 | raw[4]
                if intpart < 0 and f:
                    intpart += 1
                    f -= 0x10000
                if not -10000 < f < 10000:
                    raise ValueError(f"TIME fraction {raw[3] << 8 | raw[4]} out of range")
                packed = (intpart << 24) + f * 100
        return format_time_packed(packed, fsp)

    if nfrac == 0:
        return decode
    general = decode
    if nfrac == 3:
        from_bytes = int.from_bytes

        def decode_usec(buf: bytes, pos: int) -> str:
            # TIME(5|6): one 6-byte read; negative values and anything unusual take the general path.
            raw = buf[pos : pos + 6]
            packed = from_bytes(raw, "big") - TIMEF_OFS
            usec = packed & 0xFFFFFF
            if packed < 0 or usec > 999999 or len(raw) != 6:
                return general(buf, pos)
            hms = packed >> 24
            text = f"{d2[hms >> 12 & 0x3FF]}:{d2[hms >> 6 & 63]}:{d2[hms & 63]}"
            return f"{text}.{usec:06d}"[: len(text) + 1 + fsp]

        return decode_usec
    unit = 10000 if nfrac == 1 else 100

    def decode_frac(buf: bytes, pos: int) -> str:
        # TIME(1..4): my_time_packed_from_binary and format_time_packed in one function; anything
        # unusual (cut short, fraction or microseconds out of range) takes the general path.
        if len(buf) >= pos + 3 + nfrac:
            intpart = (buf[pos] << 16 | buf[pos + 1] << 8 | buf[pos + 2]) - TIMEF_INT_OFS
            if nfrac == 1:
                f = buf[pos + 3]
                if intpart < 0 and f:
                    intpart += 1
                    f -= 0x100
                ok = -100 < f < 100
            else:
                f = buf[pos + 3] << 8 | buf[pos + 4]
                if intpart < 0 and f:
                    intpart += 1
                    f -= 0x10000
                ok = -10000 < f < 10000
            if ok:
                packed = (intpart << 24) + f * unit
                sign = ""
                if packed < 0:
                    sign = "-"
                    packed = -packed
                hms = packed >> 24
                usec = packed & 0xFFFFFF
                if usec <= 999999:
                    return (
                        f"{sign}{d2[hms >> 12 & 0x3FF]}:{d2[hms >> 6 & 63]}:{d2[hms & 63]}"
                        f"{f'.{usec:06d}'[: 1 + fsp]}"
                    )
        return general(buf, pos)

    return decode_frac


def timestamp_decoder() -> Decoder:
    """Old TIMESTAMP (type 7): 4 bytes little-endian seconds since the epoch, as UTC."""
    return _old_timestamp


def _old_timestamp(buf: bytes, pos: int) -> str:
    sec = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16 | buf[pos + 3] << 24
    if not sec:
        return "0000-00-00 00:00:00"
    t = gmtime(sec)
    return f"{t[0]:04d}-{t[1]:02d}-{t[2]:02d}T{t[3]:02d}:{t[4]:02d}:{t[5]:02d}Z"


def datetime_decoder() -> Decoder:
    """Old DATETIME (type 12): 8 bytes little-endian integer ``YYYYMMDDhhmmss``."""

    def decode(buf: bytes, pos: int) -> str:
        raw = buf[pos : pos + 8]
        if len(raw) != 8:
            raise ValueError("DATETIME value cut short")
        v = int.from_bytes(raw, "little")
        d, t = divmod(v, 1000000)
        if d > 99991231:
            raise ValueError(f"DATETIME value {v} out of range")
        return (
            f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d} "
            f"{t // 10000:02d}:{t // 100 % 100:02d}:{t % 100:02d}"
        )

    return decode


def time_decoder() -> Decoder:
    """Old TIME (type 11): 3 bytes little-endian signed integer ``[-]HHMMSS``."""

    def decode(buf: bytes, pos: int) -> str:
        raw = buf[pos : pos + 3]
        if len(raw) != 3:
            raise ValueError("TIME value cut short")
        v = int.from_bytes(raw, "little", signed=True)
        sign = "-" if v < 0 else ""
        v = abs(v)
        return f"{sign}{v // 10000:02d}:{v // 100 % 100:02d}:{v % 100:02d}"

    return decode
