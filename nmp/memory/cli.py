"""``nmp replay``: replay a memory trace on a modeled DRAM system."""

from __future__ import annotations

import argparse

from nmp.errors import NmpError


def _run(args: argparse.Namespace) -> int:
    raise NmpError("'nmp replay' is not available yet")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="replay a memory trace on a modeled DRAM system")
    p.set_defaults(func=_run)
