"""The Debian Packages index parser, the shared-library closure used to install MySQL and MariaDB
11.8, and the private roots they are installed in.

``Packages.snippet`` is a cut-down Debian sid index: real stanzas for the MySQL server and a few of
its libraries, plus a client stanza with alternatives, a virtual package (``libssl3``, provided by
``libssl3t64``), non-library dependencies (``perl``, ``debconf | debconf-2.0``), dependencies that
are not in the index (``zlib1g``, ``libbsd0``) and a duplicate ``libc6`` stanza.
"""

from __future__ import annotations

import lzma
import subprocess
from pathlib import Path

import pytest

from sluice.errors import ConfigError
from sluice.sandbox import argv, install, private_root
from sluice.sandbox.debian import DebPackage, is_library, parse_depends, parse_packages, resolve_closure
from sluice.sandbox.install import Mariadb11Install, MysqlInstall

pytestmark = pytest.mark.unit

SNIPPET = Path(__file__).with_name("Packages.snippet")


@pytest.fixture(scope="module")
def index() -> dict[str, DebPackage]:
    return parse_packages(SNIPPET.read_text())


def test_parse_depends_drops_versions_arch_qualifiers_and_profiles() -> None:
    assert parse_depends("a (>= 1.0), b:any | c [amd64], d <!nocheck>,, ") == (("a",), ("b", "c"), ("d",))
    assert parse_depends("") == ()


def test_parse_packages_reads_the_fields_install_needs(index: dict[str, DebPackage]) -> None:
    server = index["mysql-server-core"]
    assert server.version == "9.7.4-2"
    assert server.section == "database"
    assert server.filename == "pool/main/m/mysql-9.7/mysql-server-core_9.7.4-2_amd64.deb"
    assert server.size == 26124236
    assert server.sha256 == "628d2d7d2dc827507bcae80677a9950766b002bec2c658cb96343d9f324f8660"
    assert ("perl",) in server.depends
    assert ("libc6",) in server.depends
    assert index["libssl3t64"].provides == ("libssl3",)
    client = index["mysql-client-core"]
    assert ("libedit2", "libreadline8t64") in client.depends
    assert ("debconf", "debconf-2.0") in client.depends


def test_first_stanza_of_a_name_wins(index: dict[str, DebPackage]) -> None:
    assert index["libc6"].version == "2.43-7"


def test_pre_depends_count_as_depends() -> None:
    index = parse_packages("Package: a\nPre-Depends: libx\nDepends: liby\nSection: libs\n")
    assert index["a"].depends == (("libx",), ("liby",))


def test_is_library(index: dict[str, DebPackage]) -> None:
    assert is_library(index["libc6"])
    assert is_library(index["gcc-16-base"])  # Section: libs
    assert not is_library(index["perl"])
    assert not is_library(index["debconf"])
    assert not is_library(index["openssl-provider-legacy"])  # Section: utils
    assert not is_library(index["mysql-server-core"])
    perl_module = parse_packages("Package: libdbi-perl\nSection: perl\n")["libdbi-perl"]
    assert not is_library(perl_module)


def test_closure_of_the_mysql_packages(index: dict[str, DebPackage]) -> None:
    closure = resolve_closure(index, ["mysql-server-core", "mysql-client-core"])
    assert [p.name for p in closure] == [
        "gcc-16-base",
        "libaio1t64",
        "libc-gconv-modules-extra",
        "libc6",
        "libedit2",  # first alternative of libedit2 | libreadline8t64
        "libgcc-s1",
        "libssl3t64",  # provides the virtual libssl3 the client asks for
        "libzstd1",
        "mysql-client-core",
        "mysql-server-core",
    ]


def test_closure_is_stable_and_has_no_duplicates(index: dict[str, DebPackage]) -> None:
    first = resolve_closure(index, ["mysql-client-core", "mysql-server-core"])
    second = resolve_closure(index, ["mysql-server-core", "mysql-client-core", "libc6"])
    assert first == second
    assert len({p.name for p in first}) == len(first)


def test_unknown_root_is_a_config_error(index: dict[str, DebPackage]) -> None:
    with pytest.raises(ConfigError, match="'mysql-server-core-99' is not in the Debian trixie index"):
        resolve_closure(index, ["mysql-server-core-99"], suite="trixie")


def test_fetch_index_decompresses_packages_xz(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    data = lzma.compress(SNIPPET.read_bytes())
    seen = []

    class Response:
        def __enter__(self) -> Response:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def read(self) -> bytes:
            return data

    def urlopen(url: str, timeout: float) -> Response:
        seen.append(url)
        return Response()

    monkeypatch.setattr(private_root.urllib.request, "urlopen", urlopen)
    index = private_root.fetch_index("sid", "http://mirror.example/debian")
    assert seen == ["http://mirror.example/debian/dists/sid/main/binary-amd64/Packages.xz"]
    assert "mysql-server-core" in index


def test_find_mysql_needs_the_completion_marker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("SLUICE_MYSQL_ROOT", raising=False)
    half = tmp_path / "sluice" / "mysql-9.7.4-2"
    half.mkdir(parents=True)
    assert install.find_mysql() is None  # a half-finished install does not count
    (half / install.MARKER).write_text("9.7.4-2\n")
    older = tmp_path / "sluice" / "mysql-9.1.0-1"
    older.mkdir()
    (older / install.MARKER).write_text("9.1.0-1\n")
    found = install.find_mysql()
    assert found == MysqlInstall(half, "9.7.4-2")
    with pytest.raises(ConfigError, match="no dynamic loader"):
        _ = found.loader


def test_require_mysql_says_what_to_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("SLUICE_MYSQL_ROOT", raising=False)
    with pytest.raises(ConfigError, match=r"python -m sluice\.sandbox\.install mysql"):
        install.require_mysql()


def test_require_mariadb_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "find_binary", lambda name: None)
    with pytest.raises(ConfigError, match="apt-get install mariadb-server mariadb-client"):
        install.require_mariadb()


def test_find_mariadb11_takes_the_newest_complete_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("SLUICE_MARIADB11_ROOT", raising=False)
    assert install.find_mariadb11() is None
    for version in ("11.8.9+ds-0+deb13u1", "11.8.10+ds-0+deb13u1"):
        root = tmp_path / "sluice" / f"mariadb11-{version}"
        root.mkdir(parents=True)
        (root / install.MARKER).write_text(version + "\n")
    (tmp_path / "sluice" / "mysql-9.9.9-1").mkdir()  # another kind's root is not a candidate
    (tmp_path / "sluice" / "mysql-9.9.9-1" / install.MARKER).write_text("9.9.9-1\n")
    found = install.find_mariadb11()
    assert found == Mariadb11Install(tmp_path / "sluice" / "mariadb11-11.8.10+ds-0+deb13u1", "11.8.10+ds-0+deb13u1")
    assert install.find_mysql() == MysqlInstall(tmp_path / "sluice" / "mysql-9.9.9-1", "9.9.9-1")


def test_require_mariadb11_says_what_to_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("SLUICE_MARIADB11_ROOT", raising=False)
    with pytest.raises(ConfigError, match=r"MariaDB 11\.8 .*python -m sluice\.sandbox\.install mariadb11"):
        install.require_mariadb11()


def _fake_root(root: Path) -> Mariadb11Install:
    """A root whose 'loader' prints the command line it was given, one argument a line."""
    loader = root / "usr" / "lib64" / private_root.LOADER
    loader.parent.mkdir(parents=True)
    loader.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    loader.chmod(0o755)
    for program in ("usr/bin/my_print_defaults", "usr/bin/resolveip", "usr/sbin/mariadbd",
                    "usr/bin/mariadb-install-db", "usr/bin/mariadb"):
        (root / program).parent.mkdir(parents=True, exist_ok=True)
        (root / program).write_text("")
    (root / "usr" / "share" / "mariadb").mkdir(parents=True)
    return Mariadb11Install(root, "11.8.9")


def test_install_db_helpers_run_through_the_loader_of_the_root_they_are_in(tmp_path: Path) -> None:
    staging = _fake_root(tmp_path / "staging")
    install._write_install_db_basedir(staging)
    (tmp_path / "staging").rename(tmp_path / "root")  # as the installer renames its staging root
    root = (tmp_path / "root").resolve()
    base = Mariadb11Install(root, "11.8.9").install_db_basedir
    for helper, target in (("bin/my_print_defaults", "usr/bin/my_print_defaults"),
                           ("bin/resolveip", "usr/bin/resolveip"), ("sbin/mariadbd", "usr/sbin/mariadbd")):
        ran = subprocess.run([str(base / helper), "--x=1 2"], capture_output=True, text=True, check=True)
        libs = f"{root}/lib/{private_root.TRIPLET}:{root}/usr/lib/{private_root.TRIPLET}"
        assert ran.stdout.splitlines() == ["--inhibit-cache", "--library-path", libs,
                                           f"{root}/{target}", "--x=1 2"]
    assert (base / "share" / "mariadb").is_dir()  # the SQL scripts mariadb-install-db reads


def test_mariadb11_programs_get_every_directory_of_their_root(tmp_path: Path) -> None:
    root = _fake_root(tmp_path)
    server = argv.server_argv(root, ["--port=1"], {"binlog_gtid_index": "OFF"})
    assert server[0] == str(root.loader) and server[4] == f"{tmp_path}/usr/sbin/mariadbd"
    dirs = {f"--basedir={tmp_path}/usr", f"--lc-messages-dir={tmp_path}/usr/share/mariadb",
            f"--character-sets-dir={tmp_path}/usr/share/mariadb/charsets",
            f"--plugin-dir={tmp_path}/usr/lib/mysql/plugin"}
    assert dirs <= set(server)
    assert server[-1] == "--binlog_gtid_index=OFF"
    init = argv.initialize_argv(root, tmp_path / "data", tmp_path, tmp_path / "init.log")
    assert init[0] == f"{tmp_path}/usr/bin/mariadb-install-db"
    assert f"--basedir={root.install_db_basedir}" in init
    assert dirs - {f"--basedir={tmp_path}/usr"} <= set(init)
    assert argv.client_argv(root, "-e", "SELECT 1")[4:] == [f"{tmp_path}/usr/bin/mariadb", "-e", "SELECT 1"]
