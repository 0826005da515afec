"""Server binaries for the sandboxes: MariaDB from the system, MySQL 9.x unpacked privately.

MariaDB comes from the distribution's ``mariadb-server`` / ``mariadb-client`` packages; this module
only finds its binaries and says what to install when they are missing.

MySQL 9.x is taken from Debian unstable's ``mysql-server-core`` and ``mysql-client-core`` packages.
They need a newer C library than most hosts have, so they are unpacked together with the closure of
their shared-library dependencies (``sluice.sandbox.debian``) into one private root under the
user's cache directory (``${XDG_CACHE_HOME:-~/.cache}/sluice/mysql-<version>/``) and run through
that root's own dynamic loader (``ld-linux-x86-64.so.2 --library-path ... mysqld``). Nothing is
installed system-wide. An install is complete when its marker file exists; a half-finished one is
thrown away and redone.

Run ``python -m sluice.sandbox.install mysql|mariadb|all`` to install or check.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import lzma
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sluice.errors import ConfigError
from sluice.sandbox.debian import DEBIAN_SUITE, DebPackage, parse_packages, resolve_closure

DEBIAN_MIRROR = os.environ.get("SLUICE_DEBIAN_MIRROR", "http://deb.debian.org/debian").rstrip("/")
# machine -> (Debian architecture, multiarch triplet, dynamic loader)
_ARCHES = {
    "x86_64": ("amd64", "x86_64-linux-gnu", "ld-linux-x86-64.so.2"),
    "aarch64": ("arm64", "aarch64-linux-gnu", "ld-linux-aarch64.so.1"),
}
DEBIAN_ARCH, TRIPLET, LOADER = _ARCHES.get(platform.machine(), _ARCHES["x86_64"])
MYSQL_PACKAGES = ("mysql-server-core", "mysql-client-core")
MARKER = ".sluice-complete"


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/sluice``: where downloaded servers live."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sluice"


def _say(message: str) -> None:
    print(f"sluice: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# MySQL in a private root


@dataclass(frozen=True, slots=True)
class MysqlInstall:
    """A complete private MySQL root and how to run its binaries."""

    root: Path
    version: str

    @property
    def loader(self) -> Path:
        """The root's own dynamic loader, which runs its binaries."""
        for candidate in (f"usr/lib64/{LOADER}", f"lib64/{LOADER}", f"usr/lib/{TRIPLET}/{LOADER}",
                          f"lib/{LOADER}", f"usr/lib/{LOADER}"):
            path = self.root / candidate
            if path.exists():
                return path
        raise ConfigError(f"no dynamic loader in {self.root}; remove that directory and run "
                          "'python -m sluice.sandbox.install mysql' again")

    @property
    def lib_search_path(self) -> str:
        """``--library-path`` for the loader: the root's multiarch library directories."""
        dirs = [self.root / "lib" / TRIPLET, self.root / "usr" / "lib" / TRIPLET]
        return ":".join(str(d) for d in dirs)

    @property
    def basedir(self) -> Path:
        """The server's ``--basedir``."""
        return self.root / "usr"

    @property
    def plugin_dir(self) -> Path:
        """The server's ``--plugin-dir``."""
        return self.root / "usr" / "lib" / "mysql" / "plugin"

    @property
    def lc_messages_dir(self) -> Path:
        """The server's ``--lc-messages-dir`` (its error message files)."""
        return self.root / "usr" / "share" / "mysql"

    def binary(self, name: str) -> Path:
        """Path of binary ``name`` in the root's ``usr/sbin`` or ``usr/bin``."""
        for sub in ("usr/sbin", "usr/bin"):
            path = self.root / sub / name
            if path.exists():
                return path
        raise ConfigError(f"{name} is not in {self.root}; remove that directory and run "
                          "'python -m sluice.sandbox.install mysql' again")

    def command(self, name: str, *args: str) -> list[str]:
        """argv running binary ``name`` through the private loader."""
        return [str(self.loader), "--inhibit-cache", "--library-path", self.lib_search_path,
                str(self.binary(name)), *args]


def find_mysql(root: Path | None = None) -> MysqlInstall | None:
    """The newest complete MySQL install in the cache (or ``$SLUICE_MYSQL_ROOT``), if any."""
    if root is None and os.environ.get("SLUICE_MYSQL_ROOT"):
        root = Path(os.environ["SLUICE_MYSQL_ROOT"])
    if root is not None:
        marker = root / MARKER
        return MysqlInstall(root, marker.read_text().strip()) if marker.exists() else None
    installs = []
    for marker in cache_dir().glob(f"mysql-*/{MARKER}"):
        version = marker.read_text().strip()
        installs.append((_version_key(version), MysqlInstall(marker.parent, version)))
    return max(installs, key=lambda pair: pair[0])[1] if installs else None


def require_mysql() -> MysqlInstall:
    """The MySQL install, or a ``ConfigError`` saying how to get one."""
    found = find_mysql()
    if found is None:
        raise ConfigError(
            f"MySQL 9.x is not installed under {cache_dir()}: run "
            "'python -m sluice.sandbox.install mysql' (or './run test', which does it)"
        )
    return found


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def _download(url: str, dest: Path, *, label: str) -> None:
    with urllib.request.urlopen(url, timeout=60) as response, dest.open("wb") as out:
        shutil.copyfileobj(response, out, length=1 << 20)
    _say(f"  downloaded {label} ({dest.stat().st_size / 1e6:.1f} MB)")


def fetch_index(mirror: str = DEBIAN_MIRROR) -> dict[str, DebPackage]:
    """Download and parse the Debian suite's ``Packages.xz`` index: package name -> package."""
    url = f"{mirror}/dists/{DEBIAN_SUITE}/main/binary-{DEBIAN_ARCH}/Packages.xz"
    _say(f"reading the Debian {DEBIAN_SUITE} package index ({url})")
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
    except OSError as exc:
        raise ConfigError(f"cannot download {url}: {exc}; MySQL needs network access to "
                          f"{mirror} once, to be installed") from exc
    return parse_packages(lzma.decompress(data).decode("utf-8", "replace"))


def install_mysql(*, force: bool = False, mirror: str = DEBIAN_MIRROR) -> MysqlInstall:
    """Install MySQL 9.x into the cache unless a complete install is there already."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    with (cache_dir() / "mysql-install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second installer waits, then finds the install done
        return _install_mysql_locked(force=force, mirror=mirror)


def _install_mysql_locked(*, force: bool, mirror: str) -> MysqlInstall:
    existing = find_mysql()
    if existing is not None and not force:
        _say(f"MySQL {existing.version} is installed ({existing.root})")
        return existing
    if platform.system() != "Linux" or platform.machine() not in _ARCHES:
        raise ConfigError(f"the MySQL sandbox runs Debian's Linux packages; this is {platform.system()} "
                          f"on {platform.machine()} (supported: Linux on {', '.join(_ARCHES)})")
    if shutil.which("dpkg-deb") is None:
        raise ConfigError("dpkg-deb is needed to unpack MySQL: apt-get install dpkg")
    index = fetch_index(mirror)
    packages = resolve_closure(index, MYSQL_PACKAGES)
    version = index[MYSQL_PACKAGES[0]].version
    root = cache_dir() / f"mysql-{version}"
    total = sum(p.size for p in packages)
    _say(f"installing MySQL {version}: {len(packages)} packages, {total / 1e6:.0f} MB, into {root}")
    if root.exists():
        shutil.rmtree(root)  # a half-finished install (no marker) is redone from scratch
    for stale in root.parent.glob(".mysql-*"):  # staging left by an interrupted install (we hold the lock)
        shutil.rmtree(stale, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".mysql-{version}-", dir=root.parent))
    try:
        with tempfile.TemporaryDirectory(prefix="sluice-debs-") as tmp:
            for n, package in enumerate(packages, 1):
                deb = Path(tmp) / Path(package.filename).name
                _download(f"{mirror}/{package.filename}", deb,
                          label=f"[{n}/{len(packages)}] {package.name} {package.version}")
                _verify(deb, package)
                subprocess.run(["dpkg-deb", "-x", str(deb), str(staging)], check=True)
                deb.unlink()
        install = MysqlInstall(staging, version)
        _check_runs(install)
        staging.rename(root)
        (root / MARKER).write_text(version + "\n")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _say(f"MySQL {version} is installed ({root})")
    return MysqlInstall(root, version)


def _verify(deb: Path, package: DebPackage) -> None:
    digest = hashlib.sha256()
    with deb.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != package.sha256.lower():
        raise ConfigError(f"checksum mismatch for {package.filename}: expected SHA256 {package.sha256}, "
                          f"got {digest.hexdigest()}; try again later (the mirror may be mid-update)")


def _check_runs(install: MysqlInstall) -> None:
    for name in ("mysqld", "mysql", "mysqlbinlog"):
        result = subprocess.run(install.command(name, "--version"), capture_output=True, text=True)
        if result.returncode != 0:
            raise ConfigError(f"{name} from the private MySQL root does not run: "
                              f"{(result.stderr or result.stdout).strip()[-2000:]}")


# --------------------------------------------------------------------------------------------
# MariaDB from the system

_SEARCH_DIRS = ("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin")
MARIADB_BINARIES = ("mariadbd", "mariadb-install-db", "mariadb", "mariadb-binlog")
MARIADB_HOWTO = "apt-get install mariadb-server mariadb-client (or run ./run test, which does it)"


def find_binary(name: str) -> Path | None:
    """Path of an executable on ``PATH`` or in the usual system directories; None when absent."""
    found = shutil.which(name)
    if found:
        return Path(found)
    for directory in _SEARCH_DIRS:
        path = Path(directory) / name
        if path.exists() and os.access(path, os.X_OK):
            return path
    return None


@dataclass(frozen=True, slots=True)
class MariadbInstall:
    """Where the system's MariaDB binaries are."""

    binaries: Mapping[str, Path]

    def binary(self, name: str) -> Path:
        """Path of MariaDB binary ``name`` (one of ``MARIADB_BINARIES``)."""
        return self.binaries[name]

    @property
    def basedir(self) -> Path:
        """The server's ``--basedir``: the parent of ``mariadbd``'s directory."""
        return self.binaries["mariadbd"].parent.parent


def require_mariadb() -> MariadbInstall:
    """The system's MariaDB binaries; ``ConfigError`` saying what to install when any is missing."""
    found = {name: find_binary(name) for name in MARIADB_BINARIES}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise ConfigError(f"MariaDB binaries not found: {', '.join(missing)}; install them: {MARIADB_HOWTO}")
    return MariadbInstall({name: path for name, path in found.items() if path is not None})


def check_mariadb() -> MariadbInstall:
    """``require_mariadb`` and report the server version found."""
    install = require_mariadb()
    result = subprocess.run([str(install.binary("mariadbd")), "--version"], capture_output=True, text=True)
    _say(f"MariaDB: {result.stdout.strip() or result.stderr.strip()}")
    return install


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sluice.sandbox.install mysql|mariadb|all``: install MySQL or check MariaDB."""
    parser = argparse.ArgumentParser(
        prog="python -m sluice.sandbox.install",
        description="Install (MySQL) or check (MariaDB) the server binaries the sandboxes run.",
    )
    parser.add_argument("what", choices=("mysql", "mariadb", "all"), help="which server")
    parser.add_argument("--force", action="store_true", help="reinstall MySQL even when installed")
    args = parser.parse_args(argv)
    try:
        if args.what in ("mariadb", "all"):
            check_mariadb()
        if args.what in ("mysql", "all"):
            install_mysql(force=args.force)
    except ConfigError as exc:
        print(f"sluice: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
