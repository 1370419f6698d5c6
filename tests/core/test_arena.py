"""Freed tensors' memory is kept for the next run (irrun.core.arena), on glibc.

A run's tensors then reuse the pages of the run before instead of faulting in fresh
ones; ``IRRUN_MALLOC=system`` leaves malloc alone.  Page faults are counted by the
kernel (getrusage), so these hold on any CPU; each case runs in its own process, since
malloc's settings are the process's.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc",
    reason="mallopt's thresholds are glibc's; elsewhere the C library's policy stays",
)

# Eight Negatives of a 2 MiB input, alive together until a Concat reads them: 16 MiB
# freed at once, which glibc's own policy hands back to the system after each run.
PROBE = r"""
import json, resource, sys
import numpy as np
from openvino import Model, opset8 as ops, save_model
import irrun
from irrun.core import arena

x = ops.parameter([512, 1024], np.float32, name="x")
y = ops.concat([ops.negative(ops.multiply(x, np.float32(i))) for i in range(1, 9)], 0)
save_model(Model([ops.result(y)], [x]), sys.argv[1])
m = irrun.load(sys.argv[1])
feeds = {"x": np.ones((512, 1024), np.float32)}
m.run(feeds)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    out = m.run(feeds)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5
print(json.dumps({"kept": arena.keep_freed_memory(), "faults": faults,
                  "values": next(iter(out.values()))[::512, 0].tolist()}))
"""


def _probe(tmp_path, **env):
    run = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "adds.xml")],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, **env})  # fmt: skip
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_runs_reuse_the_pages_of_the_run_before(tmp_path):
    kept = _probe(tmp_path)
    system = _probe(tmp_path, IRRUN_MALLOC="system")
    assert kept["kept"] is True and system["kept"] is False
    assert kept["values"] == system["values"] == [-1, -2, -3, -4, -5, -6, -7, -8]
    # Under malloc's own policy the 16 MiB are faulted in again each run (here about
    # 1100 pages a run); kept, the next runs find them mapped (about 100).
    assert kept["faults"] < 400
    assert system["faults"] > 3 * kept["faults"]
