"""Number formatting shared by the console tables and the report files."""

from __future__ import annotations

import math


def fmt_num(value: float | None) -> str:
    """Four significant digits; engineering-style suffix for large values (1.23 G)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    v = float(value)
    if v == 0:
        return "0"
    for scale, suffix in ((1e12, " T"), (1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(v) >= scale:
            return f"{v / scale:.4g}{suffix}"
    return f"{v:.4g}"


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}x"


def fmt_time_ns(value_ns: float | None) -> str:
    """A duration in the unit that keeps it between 1 and 1000: 117.5 µs, 1.078 ms, 2.3 s
    (never "1.078 k us")."""
    if value_ns is None or (isinstance(value_ns, float) and math.isnan(value_ns)):
        return "-"
    v = float(value_ns)
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if abs(v) >= scale:
            return f"{v / scale:.4g} {unit}"
    return f"{v:.4g} ns"
