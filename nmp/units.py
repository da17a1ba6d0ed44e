"""Unit constants and checks shared by the models; names carry units (``t_ns``, ``energy_pj``).

Only what the kit uses lives here (binary sizes, power-of-two checks, what counts as a number
in a data file). A conversion that one
formula needs is written where the formula is, with the unit in the variable's name
(``tck_ps / 1000.0`` for ``tck_ns``): a helper nobody calls would only look authoritative.
"""

from __future__ import annotations

import math
from typing import TypeGuard

KIB = 1024
MIB = 1024**2
GIB = 1024**3


def is_power_of_two(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


def log2_exact(n: int) -> int:
    """log2 of a power of two; raises ValueError otherwise."""
    if not is_power_of_two(n):
        raise ValueError(f"{n} is not a power of two")
    return n.bit_length() - 1


def is_number(x: object) -> TypeGuard[int | float]:
    """An int or a float, not a bool (a TOML or JSON ``true`` where a number was meant)."""
    return isinstance(x, int | float) and not isinstance(x, bool)


def is_finite_number(x: object) -> TypeGuard[int | float]:
    """:func:`is_number`, and neither NaN nor infinite."""
    return is_number(x) and math.isfinite(x)
