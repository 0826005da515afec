"""The Spark driver JVM's class archive: made by the first run on a machine, mapped by every later one.

Most of a Spark session's start is its JVM loading and verifying some 20,000 classes. Java's
class-data sharing keeps them parsed and verified in an archive file that a later JVM maps in
one go, which shortens both the session's start and its first job.

``driver_options()`` gives the driver's extra JVM options: ``-XX:SharedArchiveFile`` when the
archive for this Java and this pyspark exists, else ``-XX:ArchiveClassesAtExit`` into a file of
this process's own, which ``_finish`` (at the interpreter's exit) renames to the archive once
the JVM has exited cleanly, so a run killed half-way never leaves a half-written archive under
the name later runs map, and an archive whose size is not the one in its name is removed, not
mapped (a JVM mapping a cut-short archive crashes). The archive lives in ``$SLUICE_CACHE_DIR``
(default ``$XDG_CACHE_HOME/sluice``, else ``~/.cache/sluice``), about 150 MB, named by a digest of
the Java binary and pyspark's jars; ``SLUICE_NO_CLASS_ARCHIVE=1`` turns it off. The JVM refuses an archive
for another classpath or Java build by itself, silently (its ``cds`` logging is off). One run at a
time makes it (a ``.making`` file names the maker's pid); ``python -m sluice.spark.runtime.make_archive``
makes it ahead, as ``./run setup`` does.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from sluice.processes import pid_alive

__all__ = ["archive_dir", "driver_options"]

log = logging.getLogger(__name__)

_QUIET = "-Xlog:cds*=off"
_STALE_SECONDS = 4 * 3600.0  # a maker's mark this old is another process that took its pid


def archive_dir() -> Path:
    """Where the archives are kept."""
    explicit = os.environ.get("SLUICE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sluice"


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")  # as spark-class chooses its java
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.exists(found) else None


def _digest(java: str) -> str:
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    h = hashlib.sha256()
    st = os.stat(java)
    h.update(f"{java}\0{st.st_size}\0{st.st_mtime_ns}\0{pyspark.__version__}\0".encode())
    for jar in sorted(jars.glob("*.jar")):
        h.update(f"{jar.name}\0{jar.stat().st_size}\0".encode())
    return h.hexdigest()[:16]


_chosen: str | None = None  # one choice per process: its JVM starts once


def driver_options() -> str:
    """The driver JVM's options for its class archive ("" when there is none to use or make)."""
    global _chosen
    if _chosen is None:
        _chosen = _choose()
    return _chosen


def _choose() -> str:
    if os.environ.get("SLUICE_NO_CLASS_ARCHIVE", "").strip() not in ("", "0"):
        return ""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir and os.path.isdir(conf_dir) and os.listdir(conf_dir):
        return ""  # the JVM archives no classpath with a non-empty directory on it
    java = _java()
    if java is None:
        return ""
    try:
        directory = archive_dir()
        name = f"spark-{_digest(java)}"
        archive = _whole_archive(directory, name)
        if archive is not None:
            return f"{_option('-XX:SharedArchiveFile=', archive)} {_QUIET}"
        directory.mkdir(parents=True, exist_ok=True)
        if _another_maker(directory, name):
            return ""  # one run at a time makes it: making costs the run a slower JVM and its exit
        partial = directory / f"{name}.{os.getpid()}.part"
        (directory / f"{name}.{os.getpid()}.making").touch()
    except OSError as exc:
        log.debug("no class archive for the Spark driver: %s", exc)
        return ""
    atexit.register(_finish, partial, directory, name)
    return f"{_option('-XX:ArchiveClassesAtExit=', partial)} {_QUIET}"


def _option(flag: str, path: Path) -> str:
    # Spark splits extraJavaOptions at white space outside quotes.
    text = f"{flag}{path}"
    return f'"{text}"' if any(c.isspace() for c in text) else text


def _whole_archive(directory: Path, name: str) -> Path | None:
    """The archive ``name``, if one is there at the size it was kept at (its name says the size: a
    JVM mapping a cut-short archive crashes); any other is removed."""
    for path in directory.glob(f"{name}-*.jsa"):
        size = path.name[len(name) + 1:-len(".jsa")]
        if size.isdigit() and path.stat().st_size == int(size):
            return path
        path.unlink(missing_ok=True)
    return None


def _another_maker(directory: Path, name: str) -> bool:
    """Whether a live process is making the archive ``name``; what dead makers left is removed.

    A maker holds ``NAME.PID.making`` while it runs and its JVM writes ``NAME.PID.part`` at exit."""
    busy = False
    for path in [*directory.glob(f"{name}.*.making"), *directory.glob(f"{name}.*.part")]:
        pid = path.name[len(name) + 1:].partition(".")[0]
        alive = pid.isdigit() and int(pid) != os.getpid() and pid_alive(int(pid))
        if alive and path.suffix == ".making" and time.time() - path.stat().st_mtime < _STALE_SECONDS:
            busy = True
        elif not alive or path.suffix == ".making":
            path.unlink(missing_ok=True)  # left by a maker that is gone (or, that old, by a pid reused)
    return busy


def _finish(partial: Path, directory: Path, name: str) -> None:
    """Let the driver JVM exit (it writes the archive as it does) and keep the file if it did so cleanly."""
    proc = None
    try:
        proc = _gateway_process()
        if proc is None:
            return
        print("sluice: saving the Spark driver's class archive for faster starts (once on this machine)",
              file=sys.stderr, flush=True)
        if proc.stdin is not None:
            proc.stdin.close()  # the gateway's JVM exits when its standard input closes
        if proc.wait(timeout=120) == 0 and partial.is_file():
            archive = directory / f"{name}-{partial.stat().st_size}.jsa"
            os.replace(partial, archive)
            log.debug("the Spark driver's class archive is %s", archive)
    except KeyboardInterrupt:  # Ctrl-C while the JVM writes it: the archive is left to a later run
        if proc is not None:
            proc.kill()
    except Exception as exc:  # never let the archive spoil a run's exit
        log.debug("the Spark driver's class archive was not kept: %s", exc)
    finally:
        try:
            partial.unlink(missing_ok=True)
            (directory / f"{name}.{os.getpid()}.making").unlink(missing_ok=True)
        except OSError:
            pass


def _gateway_process() -> Any:
    """The driver JVM's process, its SparkContext stopped (so that no Python thread of it waits on the
    JVM when it exits); None when no JVM was started."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None) if gateway is not None else None
    if proc is not None and SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    return proc
