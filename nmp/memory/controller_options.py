"""A memory controller's named options, as data: its row policy (``controller.row_policy``) and
its refresh (``controller.refresh``). Each says which of the engine's switches it turns on;
the engine arguments ask those switches, never the option's name (as
:mod:`nmp.gpu.options` does for a GPU preset's options). A new option is one more ``register``
call here, within what the engine's switches can express.
"""

from __future__ import annotations

from dataclasses import dataclass

from nmp.registry import Registry


@dataclass(frozen=True)
class RowBufferPolicy:
    name: str
    description: str
    closes_row: bool  # every column access closes its row (the engine's closed_row switch)


@dataclass(frozen=True)
class RefreshMode:
    name: str
    description: str
    refreshes: bool  # each rank refreshes all its banks every nREFI cycles


ROW_POLICIES: Registry[RowBufferPolicy] = Registry("row policy")
REFRESH_MODES: Registry[RefreshMode] = Registry("refresh mode")

ROW_POLICIES.register(
    RowBufferPolicy("open", "a row stays open until a miss or refresh closes it", False)
)
ROW_POLICIES.register(RowBufferPolicy("closed", "every column access precharges its row", True))
REFRESH_MODES.register(RefreshMode("all-bank", "all-bank refresh every nREFI (REFab)", True))
REFRESH_MODES.register(RefreshMode("none", "no refresh (a what-if; not a real device)", False))

__all__ = ["REFRESH_MODES", "ROW_POLICIES", "RefreshMode", "RowBufferPolicy"]
