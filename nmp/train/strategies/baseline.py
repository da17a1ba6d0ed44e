"""``failure-free``: no protection, the baseline that overheads are measured against."""

from __future__ import annotations

from nmp.train.strategies.base import Strategy, register

register(Strategy)
