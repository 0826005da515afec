"""The Debian ``Packages`` index the private servers (MySQL 9.x, MariaDB 11.8) are installed from:
its stanzas parsed to what installing needs, and the closure of shared-library packages a set of
packages loads at run time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sluice.errors import ConfigError

__all__ = ["DebPackage", "is_library", "parse_depends", "parse_packages", "resolve_closure"]

# Dependencies that are not shared libraries a binary loads, even if their names look like it.
_NOT_LIBRARIES = frozenset({"perl", "perl-base", "debconf", "debconf-2.0", "libc-bin", "mysql-common"})


@dataclass(frozen=True, slots=True)
class DebPackage:
    """One stanza of a Debian ``Packages`` index, reduced to what installing needs."""

    name: str
    version: str
    section: str
    filename: str
    sha256: str
    size: int
    depends: tuple[tuple[str, ...], ...]  # AND of OR-groups of package names
    provides: tuple[str, ...] = ()


_DEP_QUALIFIERS = re.compile(r"\([^)]*\)|\[[^\]]*\]|<[^>]*>")


def parse_depends(field: str) -> tuple[tuple[str, ...], ...]:
    """``"a (>= 1), b:any | c [amd64]"`` -> ``(("a",), ("b", "c"))``: names only, versions dropped."""
    groups: list[tuple[str, ...]] = []
    for group in field.split(","):
        names = []
        for alternative in group.split("|"):
            name = _DEP_QUALIFIERS.sub("", alternative).strip().split(":", 1)[0].strip()
            if name:
                names.append(name)
        if names:
            groups.append(tuple(names))
    return tuple(groups)


def parse_packages(text: str) -> dict[str, DebPackage]:
    """Parse a ``Packages`` index. When a name appears twice, the first stanza wins."""
    index: dict[str, DebPackage] = {}
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        last = ""
        for line in stanza.splitlines():
            if not line.strip():
                continue
            if line[0] in " \t":
                if last:
                    fields[last] += "\n" + line.strip()
                continue
            key, sep, value = line.partition(":")
            if not sep:
                continue
            last = key.strip()
            fields[last] = value.strip()
        name = fields.get("Package")
        if not name or name in index:
            continue
        depends = parse_depends(fields.get("Pre-Depends", "")) + parse_depends(fields.get("Depends", ""))
        index[name] = DebPackage(
            name=name,
            version=fields.get("Version", ""),
            section=fields.get("Section", ""),
            filename=fields.get("Filename", ""),
            sha256=fields.get("SHA256", ""),
            size=int(fields.get("Size", "0") or 0),
            depends=depends,
            provides=tuple(n for group in parse_depends(fields.get("Provides", "")) for n in group),
        )
    return index


def is_library(package: DebPackage) -> bool:
    """A package whose contents a binary loads at run time (shared libraries and their data)."""
    if package.name in _NOT_LIBRARIES or package.name.endswith("-perl"):
        return False  # Perl modules (libdbi-perl) serve the servers' Perl scripts, not their binaries
    if package.section in ("libs", "oldlibs"):
        return True
    return package.name.startswith("lib") or package.name == "zlib1g"


def resolve_closure(index: Mapping[str, DebPackage], roots: Iterable[str], *,
                    suite: str = "") -> list[DebPackage]:
    """The roots plus every shared-library package they need, transitively, in a stable order.

    For an alternative ``a | b`` the first alternative that is a library package in the index is
    taken; a group with no library in it (``perl``, ``debconf | debconf-2.0``) is left out.
    ``suite`` names the index in the error for a root it does not hold.
    """
    providers: dict[str, str] = {}
    for package in index.values():
        for virtual in package.provides:
            providers.setdefault(virtual, package.name)
    chosen: dict[str, DebPackage] = {}
    pending = list(roots)
    for root in pending:
        if root not in index:
            raise ConfigError(f"package {root!r} is not in the Debian {suite or 'package'} index")
    while pending:
        name = pending.pop(0)
        if name in chosen:
            continue
        package = index[name]
        chosen[name] = package
        for group in package.depends:
            for alternative in group:
                real = alternative if alternative in index else providers.get(alternative)
                if real is not None and is_library(index[real]):
                    if real not in chosen:
                        pending.append(real)
                    break
    return sorted(chosen.values(), key=lambda p: p.name)
