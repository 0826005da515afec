"""The TOML file ``sluice run`` and ``sluice maintain`` read (``--config``): reading it, its ``lake``
setting (a path or URI, or a ``[lake]`` table with storage options) and a table of settings turned
into its settings dataclass (``maintenance_config`` for ``[maintenance]``; ``[mirror]`` too). Every
fault is a ``ConfigError`` naming the file and the setting."""

from __future__ import annotations

import dataclasses
import tomllib
from typing import Any

from sluice.errors import ConfigError

__all__ = ["lake_settings", "maintenance_config", "read_config", "settings_table"]


def read_config(path: str | None) -> dict[str, Any]:
    """The settings of the TOML file at ``path``; none without a file."""
    if not path:
        return {}
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None


def lake_settings(value: Any, config: str | None) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """``lake = "..."`` or a ``[lake]`` table (``uri``, ``[lake.storage]``): the lake and its options."""
    if value is None or isinstance(value, str):
        return value, ()
    if not isinstance(value, dict):
        raise ConfigError(f"{config}: lake is a path or URI, or a [lake] table with uri = \"...\"")
    unknown = set(value) - {"uri", "storage"}
    if unknown:
        raise ConfigError(f"{config}: unknown settings in [lake]: {sorted(unknown)}; known: ['storage', 'uri']")
    storage = value.get("storage") or {}
    if not isinstance(storage, dict):
        raise ConfigError(f"{config}: [lake.storage] must be a table of storage options (name = value)")
    for name, option in storage.items():
        if not isinstance(option, str | int | float | bool):
            raise ConfigError(f"{config}: [lake.storage] {name} must be a string, number or boolean")
    text = {str(k): (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in storage.items()}
    return value.get("uri"), tuple(sorted(text.items()))


def settings_table(cls: Any, table: Any, where: str, what: str, **overrides: Any) -> Any:
    """The settings dataclass ``cls`` from a TOML table of ``what`` settings (None: the defaults) and
    overrides that are not None; an unknown key or a bad value is a ``ConfigError`` naming it."""
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table of {what} settings")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(table) - known
    if unknown:
        raise ConfigError(f"{where}: unknown settings {sorted(unknown)}; known: {sorted(known)}")
    settings = dict(table) | {k: v for k, v in overrides.items() if v is not None}
    try:
        return cls(**settings)
    except TypeError as exc:  # the dataclass's own complaint about a value
        raise ConfigError(f"{where}: {exc}") from None


def maintenance_config(table: Any, where: str = "[maintenance]", **overrides: Any) -> Any:
    """A ``MaintenanceConfig`` from a ``[maintenance]`` TOML table (None: the defaults) and overrides
    that are not None; an unknown key or a bad value is a ``ConfigError`` naming it."""
    from sluice.lake.maintenance.steps import MaintenanceConfig

    return settings_table(MaintenanceConfig, table, where, "maintenance", **overrides)
