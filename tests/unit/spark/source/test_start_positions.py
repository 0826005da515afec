"""One rule for a start position a user writes: ``sluice tail --from`` / ``--until`` and the
``binlog`` source's ``startingPosition`` read ``FILE:POS`` alike (``sluice.binlog.position``).

The cases are the texts where a looser rule would part from this one: what ``int()`` takes besides
ASCII digits, offsets inside the 4-byte binlog header, no file name, and texts a reader of starts
would take for a GTID set (a bare file name, an offset of letters).
"""

import pytest

from sluice.binlog.position import Checkpoint, parse_position, start_checkpoint
from sluice.errors import ConfigError
from sluice.spark.source.options import SourceOptions

pytestmark = pytest.mark.unit

UUID = "3E11FA47-71CA-11E1-9E33-C80AA9429562"

POSITIONS = [
    ("binlog.000007:1234", ("binlog.000007", 1234)),
    (" binlog.000007:1234 ", ("binlog.000007", 1234)),
    ("binlog.000007", ("binlog.000007", 4)),  # a bare file, not a GTID set
    ("binlog.000007:4", ("binlog.000007", 4)),
    ("binlog.000007:2", None),  # inside the binlog header
    ("binlog.000007:abc", None),  # neither a position nor a GTID set
    ("binlog.000007:+12", None),  # int() takes these three
    ("binlog.000007: 12", None),
    ("binlog.000007:1_000", None),
    ("binlog.000007:\uff11\uff12", None),  # full-width digits: int() takes them too
    (":1234", None),  # no file name
    ("binlog.000007:", None),
    ("", None),
]


def _tail(text: str) -> tuple[str, int] | ConfigError:
    try:
        return parse_position(text, "--from")
    except ConfigError as exc:
        return exc


def _source(text: str) -> tuple[str, int] | ConfigError:
    try:
        start = SourceOptions.parse({"startingPosition": text}).start_checkpoint()
    except ConfigError as exc:
        return exc
    assert start is not None and start.gtid_set is None, start
    return start.file, start.pos


@pytest.mark.parametrize(("text", "expected"), POSITIONS)
def test_tail_and_the_source_read_a_position_alike(text, expected):
    tail, source = _tail(text), _source(text)
    if expected is None:
        assert isinstance(tail, ConfigError) and isinstance(source, ConfigError), (tail, source)
        assert "FILE:POS" in str(tail) and "4 or more" in str(tail) and repr(text) in str(tail)
        assert "--from takes a binlog position" in str(tail)
        return
    assert tail == source == expected


@pytest.mark.parametrize("gtids", [f"{UUID}:1-77", f"{UUID}:5", f"{UUID}:1-5:7,{UUID.lower()}:tag:1-3", "0-1-100",
                                   "0-1-100,1-2-7"])
def test_a_gtid_set_is_where_the_source_starts(gtids):
    """Not a position for tail's --from, though ``uuid:5`` has the shape of FILE:POS and ``0-1-100`` of a bare file."""
    assert SourceOptions.parse({"startingPosition": gtids}).start_checkpoint() == Checkpoint("", 4, gtids)
    with pytest.raises(ConfigError, match="--from takes a binlog position FILE:POS"):
        parse_position(gtids, "--from")


def test_earliest_and_latest_are_the_servers_to_answer():
    assert SourceOptions.parse({}).start_checkpoint() is None
    assert SourceOptions.parse({"startingPosition": " Latest "}).start_checkpoint() is None


def test_a_start_that_is_neither_fails_when_the_options_are_read():
    with pytest.raises(ConfigError, match=r'option\("startingPosition"\) takes a GTID set .* or a binlog position'):
        SourceOptions.parse({"startingPosition": "binlog.000007:2"})
    with pytest.raises(ConfigError, match="--until takes a binlog position"):
        parse_position("nowhere:", "--until")
    with pytest.raises(ConfigError, match="--from takes a GTID set"):
        start_checkpoint("nowhere:", "--from")
