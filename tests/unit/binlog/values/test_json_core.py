"""The compiled binary-JSON decoder (``_rowcore.parse_json``) and its twin ``json_binary.parse_json``.

Random documents (objects and arrays, small and large forms, nested, every scalar width, strings
of every length class, DECIMAL and temporal opaque values) must decode to equal values of equal
types; bytes changed at random must give the same value or make the compiled decoder fail (the row
decoder then hands the body to the twin), never a different value, and never a value where the
twin raises.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.binlog import rowplan
from sluice.binlog.values.json_binary import parse_json
from tests.conftest import examples
from tests.unit.binlog.encoders import encode_json

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(rowplan._compiled_core is None, reason="the compiled core is not built"),
]

SCALARS = (
    st.none() | st.booleans()
    | st.integers(-(1 << 63), (1 << 64) - 1)
    | st.integers(-40000, 70000)
    | st.floats(allow_nan=False)
    | st.text(max_size=140)
    | st.decimals(allow_nan=False, allow_infinity=False, places=3).filter(lambda d: abs(d) < Decimal(10) ** 20)
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
    max_leaves=30,
)


def _shape(value: Any) -> Any:
    """The value with the type of every part, so that 1 == 1.0 == True do not pass for each other."""
    if isinstance(value, dict):
        return ("dict", [(k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_shape(v) for v in value])
    return (type(value).__name__, repr(value))


def _outcome(fn: Any, data: bytes) -> Any:
    try:
        return _shape(fn(data))
    except Exception as exc:
        return ("error", type(exc).__name__)


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS, st.sampled_from([None, True]))
def test_documents_decode_alike(doc: Any, large: bool | None) -> None:
    data = encode_json(doc, large=large)
    assert _outcome(rowplan._compiled_core.parse_json, data) == _outcome(parse_json, data)


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS, st.data())
def test_changed_bytes_decode_alike_or_are_rejected(doc: Any, data: Any) -> None:
    raw = bytearray(encode_json(doc))
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    body = bytes(raw[:cut])
    compiled = _outcome(rowplan._compiled_core.parse_json, body)
    twin = _outcome(parse_json, body)
    if twin[0] == "error":
        assert compiled[0] == "error"  # the row decoder then hands the body to the twin, which says why
    elif compiled[0] == "error":
        assert compiled[1] in ("Reject", "UnicodeDecodeError")
    else:
        assert compiled == twin
