"""DECIMAL values: the server's binary decimal format (``strings/decimal.cc``, ``decimal2bin``).

A DECIMAL(M,D) is stored big-endian in groups of nine decimal digits per four bytes, the integer
part first (a leading partial group of ``M-D`` mod 9 digits), then the fraction (a trailing partial
group of ``D`` mod 9 digits). The top bit of the first byte is flipped so that positive numbers have
it set; a negative number is stored with every bit inverted. Decoding yields a ``decimal.Decimal``
with exactly ``D`` fractional digits (``Decimal('10.50')``); zero never carries a sign.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from functools import cache

__all__ = ["decimal_decoder", "decimal_size", "decode_decimal"]

DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
DIG_PER_DEC = 9
MAX_PRECISION = 65
MAX_SCALE = 30


def _layout(precision: int, scale: int) -> tuple[tuple[int, int], ...]:
    """(bytes, digits) of each group, most significant first; integer groups then fraction groups."""
    if not (1 <= precision <= MAX_PRECISION and 0 <= scale <= min(precision, MAX_SCALE)):
        raise ValueError(f"DECIMAL({precision},{scale}) is not a valid precision/scale")
    intg = precision - scale
    groups: list[tuple[int, int]] = []
    if intg % DIG_PER_DEC:
        groups.append((DIG2BYTES[intg % DIG_PER_DEC], intg % DIG_PER_DEC))
    groups.extend([(4, 9)] * (intg // DIG_PER_DEC))
    groups.extend([(4, 9)] * (scale // DIG_PER_DEC))
    if scale % DIG_PER_DEC:
        groups.append((DIG2BYTES[scale % DIG_PER_DEC], scale % DIG_PER_DEC))
    return tuple(groups)


def decimal_size(precision: int, scale: int) -> int:
    """Bytes a DECIMAL(precision, scale) value takes in a row image."""
    return sum(nbytes for nbytes, _ in _layout(precision, scale))


@cache
def decimal_decoder(precision: int, scale: int) -> Callable[[bytes, int], Decimal]:
    """A function ``(buf, pos) -> Decimal`` for DECIMAL(precision, scale); raises ValueError when bad."""
    groups = _layout(precision, scale)
    size = sum(nbytes for nbytes, _ in groups)
    top = 1 << (8 * size - 1)
    neg_mask = ((1 << (8 * size)) - 1) ^ top
    intg = precision - scale
    # (shift, mask, limit) per group, split in integer and fraction groups.
    specs: list[tuple[int, int, int, int]] = []
    shift = 8 * size
    for nbytes, ndigits in groups:
        shift -= 8 * nbytes
        specs.append((shift, (1 << (8 * nbytes)) - 1, 10**ndigits, ndigits))
    n_int = (1 if intg % DIG_PER_DEC else 0) + intg // DIG_PER_DEC
    int_specs = tuple(specs[:n_int])
    frac_specs = tuple(specs[n_int:])
    frac_zero = "0" * scale

    def decode(buf: bytes, pos: int) -> Decimal:
        raw = buf[pos : pos + size]
        if len(raw) != size:
            raise ValueError(f"DECIMAL({precision},{scale}) needs {size} bytes, found {len(raw)}")
        v = int.from_bytes(raw, "big")
        negative = not v & top
        v ^= neg_mask if negative else top
        ipart = 0
        for sh, mask, limit, _ in int_specs:
            g = (v >> sh) & mask
            if g >= limit:
                raise ValueError(f"DECIMAL({precision},{scale}) digit group {g} out of range")
            ipart = ipart * limit + g
        if scale:
            parts = []
            for sh, mask, limit, nd in frac_specs:
                g = (v >> sh) & mask
                if g >= limit:
                    raise ValueError(f"DECIMAL({precision},{scale}) digit group {g} out of range")
                parts.append(f"{g:0{nd}d}")
            frac = "".join(parts)
            if negative and (ipart or frac != frac_zero):
                return Decimal(f"-{ipart}.{frac}")
            return Decimal(f"{ipart}.{frac}")
        if negative and ipart:
            return Decimal(-ipart)
        return Decimal(ipart)

    return decode


def decode_decimal(buf: bytes, pos: int, precision: int, scale: int) -> tuple[Decimal, int]:
    """Decode one DECIMAL(precision, scale) at ``pos``; returns the value and the next offset."""
    return decimal_decoder(precision, scale)(buf, pos), pos + decimal_size(precision, scale)
