"""``retrying``: one piece of work on a connection of its own, done again as a replication stream is."""

import pytest

from sluice.cdc.follow import FollowConfig, retrying
from sluice.dsn import ConnectionConfig
from sluice.errors import ServerError, TransportError

pytestmark = pytest.mark.unit


def test_a_lost_connection_is_tried_again_with_a_doubling_delay():
    attempts, slept = [], []

    def work():
        attempts.append(1)
        if len(attempts) < 4:
            raise TransportError("the server at h:1 closed the connection")
        return "done"

    config = FollowConfig(ConnectionConfig(), retries=8, backoff_initial=0.5, backoff_max=1.5)
    assert retrying(config, "reading the schema", work, sleep=slept.append) == "done"
    assert slept == [0.5, 1.0, 1.5]


def test_it_gives_up_after_the_retries_and_never_retries_other_errors():
    slept = []

    def lost():
        raise ServerError(1053, "08S01", "Server shutdown in progress")

    config = FollowConfig(ConnectionConfig(), retries=2)
    with pytest.raises(ServerError):
        retrying(config, "x", lost, sleep=slept.append)
    assert len(slept) == 2

    def denied():
        raise ServerError(1146, "42S02", "Table 'a.b' doesn't exist")

    with pytest.raises(ServerError):
        retrying(config, "x", denied, sleep=slept.append)
    assert len(slept) == 2
