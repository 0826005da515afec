"""How many snapshot chunks are read at once (``chunk_waves``): never more than the connections
allowed, and as many as Spark's cores and those connections let run."""

from __future__ import annotations

import pytest

from sluice.errors import ConfigError
from sluice.spark.pipeline.config import PipelineConfig
from sluice.spark.snapshot.waves import DEFAULT_CONNECTIONS, chunk_waves

pytestmark = pytest.mark.unit


def at_once(cores: int, wave: int, ahead: int) -> int:
    """Chunks running at once: every task of the jobs in flight, as far as Spark's cores go."""
    return min(cores, wave * ahead)


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 8, 9, 16, 64, 200])
@pytest.mark.parametrize("connections", [None, 1, 2, 3, 4, 7, 8, 16, 64, 500])
def test_never_more_chunks_at_once_than_connections_and_no_fewer_than_one_short(cores: int,
                                                                                connections: int | None) -> None:
    wave, ahead = chunk_waves(cores, connections)
    assert wave >= 1 and ahead in (1, 2)
    limit = min(cores, DEFAULT_CONNECTIONS) if connections is None else connections
    running = at_once(cores, wave, ahead)
    assert running <= limit
    wanted = min(cores, limit)
    assert running == wanted or (running == wanted - 1 and wanted % 2 == 1 and wanted < cores)
    if limit >= cores:  # Spark's cores are the limit: a wave of two chunks per core keeps them busy
        assert (wave, ahead) == (2 * cores, 2)


def test_a_large_cluster_opens_at_most_the_default_connections() -> None:
    wave, ahead = chunk_waves(64, None)
    assert at_once(64, wave, ahead) == DEFAULT_CONNECTIONS == 8


def test_connections_below_one_are_refused() -> None:
    with pytest.raises(ConfigError, match="--snapshot-connections is at least 1"):
        PipelineConfig(source="mysql://u@h/", lake="x", snapshot_connections=0)
