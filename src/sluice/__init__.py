"""sluice: change data capture from the MySQL and MariaDB binary log.

Reads the binlog the way a replica does, decodes every event and value exactly and delivers the
committed row changes. Packages: ``wire`` (client protocol, sans-I/O), ``binlog`` (event and value
decoding, sans-I/O), ``io`` (sockets and files), ``cdc`` (transactions, positions, schema),
``sandbox`` (throwaway test servers) and the ``sluice`` command line in ``cli``. The functions
below are the public API (``sluice.api``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["read_changes", "read_events", "stream_changes", "stream_events"]

if TYPE_CHECKING:
    from sluice.api import read_changes, read_events, stream_changes, stream_events


def __getattr__(name: str) -> Any:
    # Imported on first use so that ``import sluice`` stays cheap for the command line.
    if name in __all__:
        from sluice import api

        return getattr(api, name)
    raise AttributeError(f"module 'sluice' has no attribute {name!r}")
