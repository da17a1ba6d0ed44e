"""``nmp train``: train DLRM on the modeled hardware with failures."""

from __future__ import annotations

import argparse

from nmp.errors import NmpError


def _run(args: argparse.Namespace) -> int:
    raise NmpError("'nmp train' is not available yet")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train DLRM on the modeled hardware with failures")
    p.set_defaults(func=_run)
