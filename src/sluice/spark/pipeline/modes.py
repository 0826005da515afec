"""The snapshot modes of ``sluice run`` (``--snapshot``, ``snapshot`` in the config file), named once:
the option's choices (``sluice.commands.run_settings``) and ``PipelineConfig``'s check both read them.
A module of its own, so that building the command's options imports nothing of Spark or the lake."""

from __future__ import annotations

from typing import Final

__all__ = ["SNAPSHOT_MODES"]

SNAPSHOT_MODES: Final = ("initial", "never", "only", "when-needed")
