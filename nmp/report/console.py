"""Rich console output shared by the commands."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def print_point(data: dict[str, Any], console: Console | None = None) -> None:
    """A design point: headline metrics, then its breakdown (flattened one level)."""
    console = console or Console()
    table = Table(title=f"{data.get('arch')} on {data.get('workload')}", title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in data.items():
        if key in ("arch", "workload", "breakdown") or isinstance(value, dict | list):
            continue
        table.add_row(key, _fmt(value))
    console.print(table)
    breakdown = data.get("breakdown") or {}
    if breakdown:
        bt = Table(title="breakdown", title_justify="left")
        bt.add_column("item")
        bt.add_column("value", justify="right")
        for key, value in breakdown.items():
            if isinstance(value, dict):
                for sub_key, sub_value in value.items():
                    bt.add_row(f"{key}.{sub_key}", _fmt(sub_value))
            else:
                bt.add_row(key, _fmt(value))
        console.print(bt)
