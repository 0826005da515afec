"""The ``binlog`` stream's offsets: checkpoints as ``Checkpoint.to_json`` writes them, and the
``{file, pos, gtid}`` form that offsets in existing Spark checkpoints and change-log commits have,
read back as the same checkpoint (no server, no Spark session)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.binlog.position import Checkpoint
from sluice.errors import ConfigError
from sluice.spark.source.datasource import BinlogStreamReader, SourceOptions
from sluice.spark.source.planner import offset_checkpoint

pytestmark = pytest.mark.unit

MYSQL_SET = "3d687a2c-b38e-11ed-91ef-3f952e283fc3:1-5:7"


def gtid_form(cp: Checkpoint) -> dict[str, Any]:
    """An offset in the ``{file, pos, gtid}`` form: ``""`` when GTIDs are off."""
    return {"file": cp.file, "pos": cp.pos, "gtid": cp.gtid_set or ""}


checkpoints = st.builds(
    Checkpoint,
    st.text(max_size=30),
    st.integers(0, 2**64),
    st.one_of(st.none(), st.sampled_from([MYSQL_SET, "0-1-100,1-2-7"]), st.text(min_size=1, max_size=40)),
)


@given(checkpoints)
def test_an_offset_is_the_checkpoints_json_and_reads_back(cp: Checkpoint) -> None:
    assert offset_checkpoint(json.loads(json.dumps(cp.to_json()))) == cp


@given(checkpoints)
def test_both_forms_of_an_offset_read_as_the_same_checkpoint(cp: Checkpoint) -> None:
    stored = json.loads(json.dumps(gtid_form(cp)))
    assert offset_checkpoint(stored) == offset_checkpoint(cp.to_json()) == cp


@pytest.mark.parametrize(
    ("text", "checkpoint"),
    [
        ('{"file": "mysql-bin.000003", "pos": 1234, "gtid": ""}', Checkpoint("mysql-bin.000003", 1234)),
        (f'{{"file": "binlog.000010", "pos": 4, "gtid": "{MYSQL_SET}"}}', Checkpoint("binlog.000010", 4, MYSQL_SET)),
        ('{"file": "", "pos": 4, "gtid": "0-1-100"}', Checkpoint("", 4, "0-1-100")),
    ],
)
def test_an_offset_in_the_gtid_form_is_read(text: str, checkpoint: Checkpoint) -> None:
    assert offset_checkpoint(json.loads(text)) == checkpoint


def test_a_batch_from_a_gtid_form_offset_to_the_same_position_is_empty() -> None:
    # A query restarted on a checkpoint whose last offset has the gtid form: the source's next offset
    # for the same position is in Checkpoint.to_json's form, and the batch between the two is empty.
    reader = BinlogStreamReader(SourceOptions(dsn="mysql://u@127.0.0.1:3306/"))
    for cp in (Checkpoint("binlog.000003", 1234), Checkpoint("binlog.000003", 1234, MYSQL_SET)):
        assert reader.partitions(gtid_form(cp), cp.to_json()) == []


@pytest.mark.parametrize(
    "offset",
    [
        [],
        {"pos": 4, "gtid": ""},
        {"file": "b.000001", "pos": "4", "gtid": ""},
        {"file": "b.000001", "pos": 4, "gtid": 5},
        {"file": "b.000001", "pos": 4, "gtid": "", "row": 1},
        {"file": "b.000001", "pos": 4, "gtid": "", "gtid_set": None},
        {"file": "b.000001", "pos": -1, "gtid_set": None},
    ],
)
def test_anything_else_is_a_config_error(offset: Any) -> None:
    with pytest.raises(ConfigError, match="not a binlog offset"):
        offset_checkpoint(offset)
