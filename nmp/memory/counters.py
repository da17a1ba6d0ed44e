"""The layout of the engines' counter arrays (``cnt``, ``cnt_snap`` of
:func:`nmp.memory.engine.simulate` and :func:`nmp.memory.native.simulate`): one count per
command (:data:`nmp.memory.standards.COMMANDS`), then the row hits, misses and conflicts of
reads and of writes, the forwarded reads and the coalesced writes. Apart from the engines so
that the C engine's path reads it without importing numba."""

from __future__ import annotations

from nmp.memory.standards import NCMD

C_HIT_R, C_MISS_R, C_CONF_R, C_HIT_W, C_MISS_W, C_CONF_W, C_FWD, C_COAL = range(NCMD, NCMD + 8)
N_COUNTERS = NCMD + 8
