"""Partial JSON updates replayed as MySQL's server replays them (sql/json_diff.cc), and the mirror's
JSON text read back into the document it was written from."""

from __future__ import annotations

from decimal import Decimal

import pytest

from sluice.binlog.values.json_binary import JsonDecimal, JsonDiff
from sluice.cdc.json_diffs import apply_json_diffs, parse_path
from sluice.cdc.jsonl import json_text
from sluice.lake.types.images import json_document

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("path", "legs"), [
    ("$", []),
    ("$.a", ["a"]),
    ('$."a b".c', ["a b", "c"]),
    ('$."q\\"uote"', ['q"uote']),
    ("$.ü[3]", ["ü", ("cell", 3, False)]),
    ("$[last]", [("cell", 0, True)]),
    ("$.x[last - 2]", ["x", ("cell", 2, True)]),
    ("$[0][1]", [("cell", 0, False), ("cell", 1, False)]),
])
def test_paths_in_the_servers_text(path, legs):
    assert parse_path(path) == legs


@pytest.mark.parametrize("path", ["a", "$.", "$[1", "$[*]", "$.*", "$**.a", "$[1 to 2]", "$ a"])
def test_paths_with_wildcards_ranges_or_bad_text_are_refused(path):
    with pytest.raises(ValueError):
        parse_path(path)


def test_replace_insert_and_remove_in_order():
    doc = {"a": 1, "arr": [1, 2, 3], "obj": {"k": "v"}}
    diffs = [
        JsonDiff("replace", "$.a", 1000),
        JsonDiff("remove", "$.arr[1]"),
        JsonDiff("insert", "$.arr[5]", 9),  # past the end: appended
        JsonDiff("insert", "$.arr[0]", 0),
        JsonDiff("insert", "$.obj.kk", {"x": None}),
        JsonDiff("remove", "$.obj.k"),
        JsonDiff("replace", "$.arr[last]", "end"),
    ]
    assert apply_json_diffs(doc, diffs) == {"a": 1000, "arr": [0, 1, 3, "end"], "obj": {"kk": {"x": None}}}
    assert doc == {"a": 1, "arr": [1, 2, 3], "obj": {"k": "v"}}, "the old document changed"


def test_an_inserted_member_takes_the_servers_key_order():
    doc = {"b": 1, "zz": 2, "abc": 3}
    out = apply_json_diffs(doc, [JsonDiff("insert", "$.aa", 0), JsonDiff("insert", "$.a", 0),
                                 JsonDiff("insert", '$."é"', 0)])
    assert list(out) == ["a", "b", "aa", "zz", "é", "abc"]  # by length of the UTF-8 bytes, then the bytes


@pytest.mark.parametrize("diff", [
    JsonDiff("replace", "$.missing", 1),
    JsonDiff("remove", "$.missing"),
    JsonDiff("insert", "$.a", 2),  # the member exists
    JsonDiff("insert", "$.missing.x", 2),
    JsonDiff("replace", "$.arr[7]", 1),
    JsonDiff("remove", "$.arr[7]"),
    JsonDiff("replace", "$.a[0]", 1),
    JsonDiff("replace", "$", 1),
])
def test_a_diff_that_does_not_fit_the_document_is_refused(diff):
    with pytest.raises(ValueError):
        apply_json_diffs({"a": 1, "arr": [1]}, [diff])


@pytest.mark.parametrize("value", [
    {"d": JsonDecimal("1.50"), "f": 1.5, "g": 1e300, "h": -0.0, "i": 18446744073709551615, "j": 2.0,
     "s": "é\n\"\u0001", "n": None, "t": True, "l": [JsonDecimal("-0.0010"), 3.14159, []]},
    [1, "2", {"": {}}],
    "text",
    JsonDecimal("12345678901234567890.123456789"),
])
def test_the_mirrors_json_text_reads_back_into_what_writes_it_again(value):
    text = json_text(value)
    back = json_document(text)
    assert json_text(back) == text  # a DECIMAL written as a float would (1.5) may come back as one
    if isinstance(value, dict):
        assert type(back["d"]) is JsonDecimal and type(back["f"]) is float and back["d"] == Decimal("1.50")
