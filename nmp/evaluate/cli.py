"""``nmp evaluate``: run a design-space sweep and write a report."""

from __future__ import annotations

import argparse

from nmp.errors import NmpError


def _run(args: argparse.Namespace) -> int:
    raise NmpError("'nmp evaluate' is not available yet")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="run a design-space sweep and write a report")
    p.set_defaults(func=_run)
