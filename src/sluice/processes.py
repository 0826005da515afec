"""Whether a process id names a live process, as the owner files of sluice's folders record them.

A server sandbox, the driver JVM's class archive and a lake's writer each note the pid that made
them; a later process asks ``pid_alive`` before it takes over what that pid left behind.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["pid_alive"]


def pid_alive(pid: int) -> bool:
    """True when process ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie is not alive
        if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
            return False
    return True
