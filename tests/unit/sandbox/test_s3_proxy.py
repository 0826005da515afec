"""The S3 proxy's bookkeeping that the round-trip bench reads: each request's kind, the longest
chain of requests sent one after another, and the most requests under way at once."""

from __future__ import annotations

import pytest

from tests.s3_proxy import Answered, most_in_flight, request_kind, sequential_round_trips

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("method", "path", "headers", "kind"), [
    ("GET", "/lake/db/t/_delta_log/00000000000000000001.json", {}, "GET"),
    ("GET", "/lake?list-type=2&prefix=db%2Ft%2F_delta_log%2F", {}, "LIST"),
    ("GET", "/lake?delimiter=%2F&prefix=db%2F", {}, "LIST"),
    ("HEAD", "/lake/db/t/_delta_log/_last_checkpoint", {}, "HEAD"),
    ("PUT", "/lake/db/t/part-0.parquet", {}, "PUT"),
    ("PUT", "/lake/db/t/_delta_log/x.json", {"x-amz-copy-source": "/lake/db/t/tmp"}, "COPY"),
    ("DELETE", "/lake/db/t/tmp", {}, "DELETE"),
    ("POST", "/lake?delete", {}, "DELETE"),
    ("POST", "/lake/big.parquet?uploads", {}, "POST"),
])
def test_each_request_has_its_kind(method: str, path: str, headers: dict[str, str], kind: str):
    assert request_kind(method, path, headers) == kind


def _at(start: float, end: float) -> Answered:
    return Answered("GET", "/k", 200, start, end)


def test_round_trips_count_the_requests_sent_one_after_another():
    assert sequential_round_trips([]) == 0
    assert sequential_round_trips([_at(0, 1), _at(1, 2), _at(2, 3)]) == 3  # a chain
    assert sequential_round_trips([_at(0, 1), _at(0, 1), _at(0.1, 1.1)]) == 1  # side by side
    # two side by side, then one after both, then two more in a chain beside a long one
    answered = [_at(0, 1), _at(0, 1.2), _at(1.3, 2), _at(2, 3), _at(3, 4), _at(2, 4)]
    assert sequential_round_trips(answered) == 4


def test_most_in_flight_counts_the_requests_under_way_at_one_moment():
    assert most_in_flight([]) == 0
    assert most_in_flight([_at(0, 1), _at(1, 2), _at(2, 3)]) == 1  # one answered as the next is sent
    assert most_in_flight([_at(0, 1), _at(0.5, 1.5), _at(0.9, 2), _at(1.2, 3)]) == 3
    assert most_in_flight([_at(0, 1)] * 4 + [_at(1, 2)] * 4) == 4  # two rounds of four
