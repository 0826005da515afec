"""``worker_python``: the script a local Spark starts its Python processes with drops pyspark's zip
from ``PYTHONPATH``, keeps every other entry in order, and runs this interpreter with the arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sluice.spark.runtime.worker_python import worker_python

pytestmark = pytest.mark.unit

PRINT = ("import json, os, sys; "
         "print(json.dumps([sys.executable, sys.argv[1:], sys.path, 'PYTHONPATH' in os.environ]))")


def run(script: str, pythonpath: str | None, *args: str) -> list:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run([script, "-c", PRINT, *args], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_pyspark_zip_leaves_the_path_and_the_rest_stays_in_order(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICE_CACHE_DIR", str(tmp_path / "cache"))
    script = worker_python()
    assert script is not None and Path(script).parent == tmp_path / "cache"
    assert worker_python() == script  # made once
    spark_home = tmp_path / "spark home*"
    entries = [str(spark_home / "python/lib/pyspark.zip"), str(spark_home / "python/lib/py4j-0.10.9.9-src.zip"),
               str(tmp_path / "a b"), str(tmp_path / "c*"), str(tmp_path / "pyspark.zip")]
    executable, args, path, has = run(script, ":".join(entries), "x y", "$HOME", "*")
    assert Path(executable).resolve() == Path(sys.executable).resolve()
    assert args == ["x y", "$HOME", "*"]
    assert has and [p for p in path if p in entries] == entries[1:]


def test_a_path_of_only_the_zip_or_none_leaves_no_pythonpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICE_CACHE_DIR", str(tmp_path))
    script = worker_python()
    assert script is not None
    assert run(script, "/opt/spark/python/lib/pyspark.zip")[3] is False
    assert run(script, None)[3] is False


def test_an_unwritable_cache_gives_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("SLUICE_CACHE_DIR", str(blocked / "cache"))
    assert worker_python() is None
