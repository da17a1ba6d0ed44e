"""The fork server's preload leaves nothing that breaks a fork on a CUDA build of torch: no
backward pass has run (autograd's device threads start with the first one, and a forked child
then refuses autograd) and CUDA is not initialised. Checked in a fresh interpreter, where the
engine is wrapped before the preload is imported, so that a backward anywhere in it is seen."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = r"""
import json, torch
from torch.autograd.variable import Variable

calls = []
real = Variable._execution_engine

class Engine:
    def run_backward(self, *a, **k):
        calls.append("run_backward")
        return real.run_backward(*a, **k)
    def __getattr__(self, name):
        return getattr(real, name)

Variable._execution_engine = Engine()
import nmp.train.dist.preload as preload
x = torch.ones(2, requires_grad=True)
(x * 2).sum().backward()  # the probe's own backward: the wrapper sees backwards
print(json.dumps({"backwards_in_preload": len(calls) - 1, "cuda": torch.cuda.is_initialized(),
                  "warm_error": preload.WARM_ERROR}))
"""


def test_the_fork_servers_preload_runs_no_backward_and_leaves_cuda_alone():
    from nmp.train.dist.launch import PRELOAD

    assert "nmp.train.dist.preload" in PRELOAD
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=os.environ, check=True
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["warm_error"] is None  # the warm-up itself ran (else this test would be vacuous)
    assert seen["backwards_in_preload"] == 0
    assert seen["cuda"] is False
