"""``nmp rtl``: export and characterize the parity-update datapath."""

from __future__ import annotations

import argparse

from nmp.errors import NmpError


def _run(args: argparse.Namespace) -> int:
    raise NmpError("'nmp rtl' is not available yet")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rtl", help="export and characterize the parity-update datapath")
    p.set_defaults(func=_run)
