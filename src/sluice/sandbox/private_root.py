"""Servers unpacked from Debian packages into a private root of the user's cache and run through it.

MySQL 9.x (Debian unstable) and MariaDB 11.8 (Debian 13 "trixie") need a newer C library than the
hosts sluice runs on. A ``Recipe`` names the suite and the packages; ``install`` downloads the
suite's ``Packages.xz``, resolves the closure of their shared-library dependencies
(``sluice.sandbox.debian``), checks every download's SHA256, unpacks them with ``dpkg-deb -x`` into
``${XDG_CACHE_HOME:-~/.cache}/sluice/<kind>-<version>/`` and checks that the binaries run. A
``PrivateRoot`` runs a binary through the root's own dynamic loader
(``ld-linux-x86-64.so.2 --library-path ... mysqld``); nothing is installed system-wide. An install
is complete when its marker file exists; a half-finished one is thrown away and redone. Installs of
one kind are serialised by a lock file, so a second installer waits and then finds it done.
"""

from __future__ import annotations

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from sluice.errors import ConfigError
from sluice.sandbox.debian import DebPackage, parse_packages, resolve_closure

__all__ = ["DEBIAN_ARCH", "DEBIAN_MIRROR", "LOADER", "MARKER", "TRIPLET", "PrivateRoot", "Recipe",
           "cache_dir", "fetch_index", "find_root", "install", "say"]

DEBIAN_MIRROR = os.environ.get("SLUICE_DEBIAN_MIRROR", "http://deb.debian.org/debian").rstrip("/")
# machine -> (Debian architecture, multiarch triplet, dynamic loader)
_ARCHES = {
    "x86_64": ("amd64", "x86_64-linux-gnu", "ld-linux-x86-64.so.2"),
    "aarch64": ("arm64", "aarch64-linux-gnu", "ld-linux-aarch64.so.1"),
}
DEBIAN_ARCH, TRIPLET, LOADER = _ARCHES.get(platform.machine(), _ARCHES["x86_64"])
MARKER = ".sluice-complete"


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/sluice``: where downloaded servers live."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sluice"


def say(message: str) -> None:
    """A progress line of the installer on standard error."""
    print(f"sluice: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class PrivateRoot:
    """A complete private root of unpacked packages and how to run its binaries."""

    KIND: ClassVar[str] = "mysql"  # the install command's argument, the root's name prefix

    root: Path
    version: str

    def _redo(self) -> str:
        return (f"remove that directory and run 'python -m sluice.sandbox.install {self.KIND}' again")

    @property
    def loader(self) -> Path:
        """The root's own dynamic loader, which runs its binaries."""
        for candidate in (f"usr/lib64/{LOADER}", f"lib64/{LOADER}", f"usr/lib/{TRIPLET}/{LOADER}",
                          f"lib/{LOADER}", f"usr/lib/{LOADER}"):
            path = self.root / candidate
            if path.exists():
                return path
        raise ConfigError(f"no dynamic loader in {self.root}; {self._redo()}")

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
        raise ConfigError(f"{name} is not in {self.root}; {self._redo()}")

    def command(self, name: str, *args: str) -> list[str]:
        """argv running binary ``name`` through the private loader."""
        return [str(self.loader), "--inhibit-cache", "--library-path", self.lib_search_path,
                str(self.binary(name)), *args]


R = TypeVar("R", bound=PrivateRoot)


@dataclass(frozen=True, slots=True)
class Recipe(Generic[R]):
    """What one kind of private root is made of."""

    kind: type[R]  # its ``KIND`` names the root (``<KIND>-<version>``) and the install command
    label: str  # "MySQL", "MariaDB 11.8": for messages
    suite: str  # the Debian suite the packages come from
    packages: tuple[str, ...]  # the roots of the closure; the first one's version is the install's
    checks: tuple[str, ...]  # binaries that must answer ``--version`` once unpacked
    root_env: str  # an environment variable naming a root to use instead of the cache's newest
    finish: Callable[[R], None] | None = None  # what the unpacked root needs before its checks


def fetch_index(suite: str, mirror: str = DEBIAN_MIRROR) -> dict[str, DebPackage]:
    """Download and parse the Debian suite's ``Packages.xz`` index: package name -> package."""
    url = f"{mirror}/dists/{suite}/main/binary-{DEBIAN_ARCH}/Packages.xz"
    say(f"reading the Debian {suite} package index ({url})")
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
    except OSError as exc:
        raise ConfigError(f"cannot download {url}: {exc}; the server needs network access to "
                          f"{mirror} once, to be installed") from exc
    return parse_packages(lzma.decompress(data).decode("utf-8", "replace"))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def find_root(recipe: Recipe[R]) -> R | None:
    """The newest complete install of the recipe's kind in the cache (or its ``root_env``), if any."""
    kind = recipe.kind
    if os.environ.get(recipe.root_env):
        marker = Path(os.environ[recipe.root_env]) / MARKER
        return kind(marker.parent, marker.read_text().strip()) if marker.exists() else None
    installs = []
    for marker in cache_dir().glob(f"{kind.KIND}-[0-9]*/{MARKER}"):
        version = marker.read_text().strip()
        installs.append((_version_key(version), kind(marker.parent, version)))
    return max(installs, key=lambda pair: pair[0])[1] if installs else None


def install(recipe: Recipe[R], *, force: bool = False, mirror: str = DEBIAN_MIRROR) -> R:
    """Install the recipe's packages into the cache unless a complete install is there already."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    with (cache_dir() / f"{recipe.kind.KIND}-install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second installer waits, then finds the install done
        existing = find_root(recipe)
        if existing is not None and not force:
            say(f"{recipe.label} {existing.version} is installed ({existing.root})")
            return existing
        return _install_locked(recipe, mirror)


def _install_locked(recipe: Recipe[R], mirror: str) -> R:
    if platform.system() != "Linux" or platform.machine() not in _ARCHES:
        raise ConfigError(f"the {recipe.label} sandbox runs Debian's Linux packages; this is "
                          f"{platform.system()} on {platform.machine()} (supported: Linux on "
                          f"{', '.join(_ARCHES)})")
    if shutil.which("dpkg-deb") is None:
        raise ConfigError(f"dpkg-deb is needed to unpack {recipe.label}: apt-get install dpkg")
    index = fetch_index(recipe.suite, mirror)
    packages = resolve_closure(index, recipe.packages, suite=recipe.suite)
    version = index[recipe.packages[0]].version.partition(":")[2] or index[recipe.packages[0]].version
    prefix = recipe.kind.KIND
    root = cache_dir() / f"{prefix}-{version}"
    total = sum(p.size for p in packages)
    say(f"installing {recipe.label} {version}: {len(packages)} packages, {total / 1e6:.0f} MB, into {root}")
    if root.exists():
        shutil.rmtree(root)  # a half-finished install (no marker) is redone from scratch
    for stale in root.parent.glob(f".{prefix}-*"):  # staging left by an interrupted install (we hold the lock)
        shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{prefix}-{version}-", dir=root.parent))
    try:
        with tempfile.TemporaryDirectory(prefix="sluice-debs-") as tmp:
            for n, package in enumerate(packages, 1):
                deb = Path(tmp) / Path(package.filename).name
                _download(f"{mirror}/{package.filename}", deb,
                          label=f"[{n}/{len(packages)}] {package.name} {package.version}")
                _verify(deb, package)
                subprocess.run(["dpkg-deb", "-x", str(deb), str(staging)], check=True)
                deb.unlink()
        unpacked = recipe.kind(staging, version)
        if recipe.finish is not None:
            recipe.finish(unpacked)
        _check_runs(unpacked, recipe.checks)
        staging.rename(root)
        (root / MARKER).write_text(version + "\n")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    say(f"{recipe.label} {version} is installed ({root})")
    return recipe.kind(root, version)


def _download(url: str, dest: Path, *, label: str) -> None:
    with urllib.request.urlopen(url, timeout=60) as response, dest.open("wb") as out:
        shutil.copyfileobj(response, out, length=1 << 20)
    say(f"  downloaded {label} ({dest.stat().st_size / 1e6:.1f} MB)")


def _verify(deb: Path, package: DebPackage) -> None:
    digest = hashlib.sha256()
    with deb.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != package.sha256.lower():
        raise ConfigError(f"checksum mismatch for {package.filename}: expected SHA256 {package.sha256}, "
                          f"got {digest.hexdigest()}; try again later (the mirror may be mid-update)")


def _check_runs(root: PrivateRoot, names: tuple[str, ...]) -> None:
    for name in names:
        result = subprocess.run(root.command(name, "--version"), capture_output=True, text=True)
        if result.returncode != 0:
            raise ConfigError(f"{name} from the private root {root.root} does not run: "
                              f"{(result.stderr or result.stdout).strip()[-2000:]}")
