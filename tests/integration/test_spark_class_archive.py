"""The Spark driver's class archive on a real JVM: the first run makes it, the next one maps it.

Each run is a child process with a cache directory of the test's own. The second run asks for
``-Xshare:on``, with which the JVM stops rather than start without the archive, so a passing run
did map it; neither run may print Spark's or the JVM's own lines.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_SCRIPT = """
import sys
from sluice.spark.runtime.session import spark_session
conf = {"spark.driver.extraJavaOptions": sys.argv[1]} if len(sys.argv) > 1 else {}
spark = spark_session("local[1]", conf=conf)
assert spark.range(5).count() == 5
"""


def test_the_first_run_makes_the_archive_and_the_next_maps_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONF_DIR", "SLUICE_NO_CLASS_ARCHIVE")}
    env["SLUICE_CACHE_DIR"] = str(tmp_path)

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, "-c", _SCRIPT, *args], env=env, capture_output=True, text=True,
                              timeout=400)
        assert done.returncode == 0, done.stderr
        return done.stderr

    first = run()
    [archive] = tmp_path.glob("spark-*.jsa")
    assert archive.stat().st_size > 10_000_000
    assert not list(tmp_path.glob("*.part"))
    second = run("-Xshare:on")
    assert list(tmp_path.glob("spark-*.jsa")) == [archive]
    assert "class archive" in first and "class archive" not in second
    for err in (first, second):
        lines = [line for line in err.splitlines() if line.strip()]
        assert all(line.startswith("sluice:") for line in lines), err
