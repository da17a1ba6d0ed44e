"""A reader that leaves early (``nmp models | head -2``) ends the command with status 0, as
for every other output of the kit (rich's console exited with 1)."""

from __future__ import annotations

import subprocess
import sys


def test_a_table_piped_into_a_reader_that_leaves_exits_0() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "nmp", "models"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # the reader leaves after one line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "error" not in err
