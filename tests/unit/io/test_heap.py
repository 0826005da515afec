"""``keep_batch_memory``: a batch's buffers take the pages the batch before freed."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

_BATCHES = """
import resource, sys
from sluice.io.heap import keep_batch_memory
print(keep_batch_memory())
def batch():
    blocks = [bytearray(n << 20) for n in (1, 2, 4, 8, 16)]  # 31 MiB, every page written
    del blocks
batch()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
batch()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the thresholds are glibc's")
def test_a_second_batch_of_buffers_faults_in_no_new_pages() -> None:
    # A process of its own: what the allocator did before in this one would decide the outcome.
    out = subprocess.run([sys.executable, "-c", _BATCHES], capture_output=True, text=True, check=True).stdout.split()
    if out[0] != "True":
        pytest.skip("the C library is not glibc: keep_batch_memory changes nothing")
    pages = (31 << 20) // 4096
    assert int(out[1]) < pages // 20, f"{out[1]} page faults for a second batch of {pages} pages"
