"""The DRAM engines' configuration and the C engine's arguments, named field by field, with no
numpy: ``engine_defs.h``'s ``Params`` and ``Args`` as ctypes structures. :mod:`nmp.memory.
engine_params` builds the numpy record both engines read from the same fields;
:mod:`nmp.memory.native_lib` checks both sizes against the library's; :mod:`nmp.memory.
text_replay` (``nmp replay``'s start-up without numpy) fills them from plain values."""

from __future__ import annotations

import ctypes

# (name, meaning); every field but the watermarks an int64
INT_FIELDS = (
    ("channels", "channels of the organization"),
    ("ranks", "ranks (HBM: pseudo-channels) per channel"),
    ("bankgroups", "bank groups per rank"),
    ("banks", "banks per bank group"),
    ("read_queue", "read buffer entries per channel"),
    ("write_queue", "write buffer entries per channel"),
    ("frontend_ratio", "requests the frontend offers per memory cycle"),
    ("nrefi", "cycles between all-bank refreshes"),
    ("read_latency", "cycles from a read command to its data"),
    ("dual_issue", "1: a column and a row command per cycle (HBM)"),
    ("closed_row", "1: closed-row policy (RDA / WRA)"),
    ("refresh_on", "1: all-bank refresh"),
    ("drain", "1: run until every request has completed"),
    ("skip_blocked", "1: a PRE closing an active-buffer row is not eligible (README section 4)"),
    ("jump", "1: skip cycles in which nothing can happen (0: a test of every cycle)"),
    ("hold_hit_rows", "1: no PRE while its bank's open row has hits queued (with skip_blocked)"),
)
FLOAT_FIELDS = (
    ("wm_high", "write buffer high watermark (entries; write mode above it)"),
    ("wm_low", "write buffer low watermark (entries; read mode below it)"),
)
FIELD_NAMES = tuple(name for name, _ in INT_FIELDS + FLOAT_FIELDS)


class ParamsStruct(ctypes.Structure):
    """engine_defs.h's ``Params``: a run's configuration, field for field."""

    _fields_ = [(name, ctypes.c_int64) for name, _ in INT_FIELDS] + [
        (name, ctypes.c_double) for name, _ in FLOAT_FIELDS
    ]


_P = ctypes.c_void_p
_I = ctypes.c_int64


class EngineArgs(ctypes.Structure):
    """The arguments of ``simulate_c``: engine_defs.h's ``Args``, field for field (pointers to
    the arrays, ``params`` to one ``Params``)."""

    _fields_ = [
        ("addr", _P),
        ("line_wr", _P),
        ("line_arr", _P),
        ("n", _I),
        ("decode", _P),
        ("params", _P),
        ("tab_i", _P),
        ("nxt", _P),
        ("lat", _P),
        ("win", _P),
        ("log", _P),
        ("maxlog", _I),
        ("out_scalars", _P),
        ("cnt_snap", _P),
        ("cnt", _P),
        ("arrive", _P),
        ("depart", _P),
        ("done", _P),
        ("active_cycles", _P),
        ("forwarded", _P),
        ("threads", _I),
    ]
