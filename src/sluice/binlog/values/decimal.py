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

from sluice.codegen import define

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
    """A function ``(buf, pos) -> Decimal`` for DECIMAL(precision, scale); raises ValueError when bad.

    The function is generated straight-line code for this precision and scale (no loop over the
    digit groups), as it runs once per value.
    """
    groups = _layout(precision, scale)
    size = sum(nbytes for nbytes, _ in groups)
    top = 1 << (8 * size - 1)
    neg_mask = ((1 << (8 * size)) - 1) ^ top
    lines = [
        "def decode(buf, pos):",
        f"    v = _from_bytes(buf[pos:pos + {size}], 'big')",
        f"    if v & {top}:",
        f"        v ^= {top}",
        "        sign = ''",
        "    else:",
        f"        v ^= {neg_mask}",
        "        sign = '-' if v else ''",
    ]
    shift = 8 * size
    checks = []
    names = []
    for k, (nbytes, ndigits) in enumerate(groups):
        shift -= 8 * nbytes
        lines.append(f"    g{k} = v >> {shift} & {(1 << (8 * nbytes)) - 1}")
        checks.append(f"g{k} >= {10**ndigits}")
        names.append((f"g{k}", ndigits))
    lines.append(f"    if {' or '.join(checks)}:")
    lines.append(f"        raise ValueError('DECIMAL({precision},{scale}): a digit group is out of range')")
    # The magnitude as one integer of all digits, then Decimal("<digits>E-<scale>"): the string
    # constructor is exact (no context rounding) and keeps exactly `scale` fractional digits.
    mag = "0"
    for name, nd in names:
        mag = name if mag == "0" else f"({mag}) * {10**nd} + {name}"
    if scale:
        lines.append(f"    return _Decimal(f'{{sign}}{{{mag}}}E-{scale}')")
    else:
        lines.append(f"    return _Decimal(f'{{sign}}{{{mag}}}')")
    if len(groups) == 0:
        raise ValueError(f"DECIMAL({precision},{scale}) has no digits")
    decode: Callable[[bytes, int], Decimal] = define(
        "\n".join(lines) + "\n", "decode", {"_from_bytes": int.from_bytes, "_Decimal": Decimal},
        f"decimal({precision},{scale})")
    return decode


def decode_decimal(buf: bytes, pos: int, precision: int, scale: int) -> tuple[Decimal, int]:
    """Decode one DECIMAL(precision, scale) at ``pos``; returns the value and the next offset."""
    return decimal_decoder(precision, scale)(buf, pos), pos + decimal_size(precision, scale)
