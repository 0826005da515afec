"""The Spark driver's class archive: which JVM options a run gets, and what is kept of a run's archive."""

from __future__ import annotations

import atexit
import os
import subprocess
from pathlib import Path

import pytest

from sluice.spark.runtime import jvm_archive

pytestmark = pytest.mark.unit


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(jvm_archive, "_chosen", None)
    monkeypatch.setenv("SLUICE_CACHE_DIR", str(tmp_path / "cache dir"))
    monkeypatch.delenv("SLUICE_NO_CLASS_ARCHIVE", raising=False)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    yield tmp_path / "cache dir"
    atexit.unregister(jvm_archive._finish)


def name() -> str:
    java = jvm_archive._java()
    if java is None:
        pytest.skip("no java on this machine: Spark cannot run here either")
    return f"spark-{jvm_archive._digest(java)}"


def test_a_first_run_makes_the_archive_into_a_file_of_its_own(fresh: Path) -> None:
    options = jvm_archive._choose()
    part = fresh / f"{name()}.{os.getpid()}.part"
    assert options == f'"-XX:ArchiveClassesAtExit={part}" -Xlog:cds*=off'  # quoted: the path has a space


def test_a_whole_archive_is_mapped_and_a_cut_one_removed(fresh: Path) -> None:
    fresh.mkdir()
    cut = fresh / f"{name()}-100.jsa"
    cut.write_bytes(b"x" * 60)
    assert "ArchiveClassesAtExit" in jvm_archive._choose()
    assert not cut.exists()
    whole = fresh / f"{name()}-100.jsa"
    whole.write_bytes(b"x" * 100)
    assert jvm_archive._choose() == f'"-XX:SharedArchiveFile={whole}" -Xlog:cds*=off'


def test_what_dead_makers_left_goes_and_a_live_makers_stays(fresh: Path) -> None:
    fresh.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    with subprocess.Popen(["sleep", "30"]) as live:
        try:
            left, kept = fresh / f"{name()}.{gone.pid}.part", fresh / f"{name()}.{live.pid}.part"
            left.write_bytes(b"x")
            kept.write_bytes(b"x")
            assert "ArchiveClassesAtExit" in jvm_archive._choose()
            assert not left.exists() and kept.exists()
        finally:
            live.kill()


@pytest.mark.parametrize("setting", ["no-archive", "conf-dir"])
def test_no_archive_when_turned_off_or_a_conf_dir_is_on_the_classpath(
        fresh: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, setting: str) -> None:
    if setting == "no-archive":
        monkeypatch.setenv("SLUICE_NO_CLASS_ARCHIVE", "1")
    else:
        (tmp_path / "conf").mkdir()
        (tmp_path / "conf" / "log4j2.properties").write_text("")
        monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    assert jvm_archive._choose() == ""


def test_the_archive_is_kept_only_when_the_jvm_exited_cleanly(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh.mkdir()
    for code, kept in ((1, False), (0, True)):
        part = fresh / "spark-k.7.part"
        part.write_bytes(b"y" * 42)
        proc = subprocess.Popen(["sh", "-c", f"cat >/dev/null; exit {code}"], stdin=subprocess.PIPE)
        monkeypatch.setattr(jvm_archive, "_gateway_process", lambda proc=proc: proc)
        jvm_archive._finish(part, fresh, "spark-k")
        assert not part.exists()
        assert (fresh / "spark-k-42.jsa").exists() == kept


def test_ctrl_c_while_the_jvm_writes_the_archive_ends_it_and_keeps_nothing(
        fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh.mkdir()
    part = fresh / "spark-k.7.part"
    part.write_bytes(b"y" * 42)
    jvm = subprocess.Popen(["sleep", "60"])

    class Interrupted:  # the JVM's process, with Ctrl-C coming while sluice waits for it
        stdin = None
        kill = jvm.kill

        def wait(self, timeout: float) -> int:
            raise KeyboardInterrupt

    monkeypatch.setattr(jvm_archive, "_gateway_process", Interrupted)
    jvm_archive._finish(part, fresh, "spark-k")  # no KeyboardInterrupt out of the exit's callback
    assert jvm.wait(10) == -9
    assert not part.exists() and not list(fresh.glob("*.jsa"))


def test_one_run_at_a_time_makes_the_archive(fresh: Path) -> None:
    fresh.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    (fresh / f"{name()}.{gone.pid}.making").touch()  # its maker died: another run may make it
    assert "ArchiveClassesAtExit" in jvm_archive._choose()
    assert not (fresh / f"{name()}.{gone.pid}.making").exists()
    assert (fresh / f"{name()}.{os.getpid()}.making").exists()
    os.unlink(fresh / f"{name()}.{os.getpid()}.making")
    with subprocess.Popen(["sleep", "30"]) as maker:
        (fresh / f"{name()}.{maker.pid}.making").touch()
        try:
            assert jvm_archive._choose() == ""
        finally:
            maker.kill()
