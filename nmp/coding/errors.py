"""Errors of the erasure-coding layer (both are NmpErrors: the CLI prints them cleanly)."""

from __future__ import annotations

from nmp.errors import NmpError


class CodingError(NmpError):
    """Bad input to a code: wrong shape, dtype, row index or code parameters."""


class DecodeError(CodingError):
    """More shards are lost than the code can rebuild; no data is returned."""
