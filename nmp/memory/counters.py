"""The layout of the engines' counter arrays (``cnt``, ``cnt_snap`` of
:func:`nmp.memory.engine.simulate` and :func:`nmp.memory.native.simulate`): one count per
command (:data:`nmp.memory.standards.COMMANDS`), then the row hits, misses and conflicts of
reads and of writes, the forwarded reads, the coalesced writes, and the cycles a bank had a row
open (summed over the banks). Apart from the engines so that the C engine's path reads it
without importing numba."""

from __future__ import annotations

from nmp.memory.standards import NCMD

C_HIT_R, C_MISS_R, C_CONF_R, C_HIT_W, C_MISS_W, C_CONF_W, C_FWD, C_COAL = range(NCMD, NCMD + 8)
# cycles a bank had a row open, summed over the banks (DRAMPower's bank-wise background):
# counted as minus each ACT's cycle, plus each close's, plus the open banks' at the run's end
C_BANK_OPEN = NCMD + 8
N_COUNTERS = NCMD + 9
