"""Fresh data directories for sandbox servers: each flavor's is initialised once per process, as a
template in a temporary directory, and every new sandbox of that flavor gets a copy of it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from sluice.sandbox.argv import Install, initialize_argv
from sluice.sandbox.process import OWNER_FILE, SandboxError, log_tail

__all__ = ["fresh_datadir", "remove_templates"]

_templates: dict[str, Path] = {}  # flavor -> an initialised data directory that new sandboxes copy
_templates_lock = threading.Lock()


def fresh_datadir(flavor: str, install: Install, datadir: Path, *, timeout: float) -> None:
    """Create ``datadir`` as a copy of the flavor's template, initialising that first if needed."""
    with _templates_lock:
        template = _templates.get(flavor)
        if template is None or not template.exists():
            base = Path(tempfile.mkdtemp(prefix=f"sluice-template-{flavor}-"))
            (base / OWNER_FILE).write_text(f"{os.getpid()}\n")
            (base / "tmp").mkdir()
            try:
                _initialize(flavor, install, base / "data", base, timeout=timeout)
            except BaseException:
                shutil.rmtree(base, ignore_errors=True)
                raise
            template = _templates[flavor] = base / "data"
    shutil.copytree(template, datadir, symlinks=True)
    (datadir / "auto.cnf").unlink(missing_ok=True)  # MySQL: a new server_uuid per sandbox


def _initialize(flavor: str, install: Install, datadir: Path, workdir: Path, *, timeout: float) -> None:
    init_log = workdir / "init.log"
    argv = initialize_argv(install, datadir, workdir, init_log)
    with init_log.open("ab") as out:
        result = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, cwd=workdir,
                                timeout=timeout, check=False)
    if result.returncode != 0:
        raise SandboxError(f"initialising the {flavor} data directory {datadir} failed "
                           f"(exit {result.returncode}); {init_log} ends with:\n{log_tail(init_log)}")


def remove_templates() -> None:
    """Remove every template this process initialised."""
    with _templates_lock:
        for template in _templates.values():
            shutil.rmtree(template.parent, ignore_errors=True)
        _templates.clear()
