"""The driver JVM's start as a user sees it: sluice's lines only, and a JVM that cannot start explained.

Each case is a child process with a real Spark driver (the launcher's own error exits before the
JVM is up, so it costs about a second).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = [pytest.mark.spark]

_SCRIPT = """
import sys
from sluice.errors import ConfigError
from sluice.spark.runtime.session import spark_session
try:
    spark_session("local[1]", conf={"spark.driver.extraJavaOptions": sys.argv[1]})
except ConfigError as exc:
    print(f"ConfigError: {exc}", file=sys.stderr)
    sys.exit(3)
"""


def test_a_driver_that_cannot_start_shows_its_message_then_a_config_error() -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, "-Xmx1k"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr
    jvm_said = done.stderr.index("Not allowed to specify max heap")
    sluice_said = done.stderr.index("ConfigError: Spark's driver JVM exited before it started")
    assert jvm_said < sluice_said, done.stderr
    assert "Traceback" not in done.stderr
