"""nmp.memory: DRAM standards, presets, address mapping, a Ramulator-2-exact timing engine,
energy and trace I/O.

Quick use::

    from nmp.memory import load_memory, replay, make_requests
    spec = load_memory("ddr4-3200aa", ranks=2)
    stats = replay("traces/stream_64k.trace.gz", spec)   # or replay(make_requests(addrs), spec)
    stats.cycles, stats.cycles_drained, stats.row_hits, stats.energy_pj
    replay_lines(addrs, spec)   # = replay(make_requests(addrs), spec), without a request array

Requests are 64-B lines (``spec.controller.line_bytes``); on HBM each line becomes
``line_bytes / tx_bytes`` transactions (addr, addr+32), as in the reference setup. An optional
``arrival`` field (``make_requests(addr, write, arrival=cycles)``) holds requests back until
their memory cycle; without it they are offered at the preset's frontend rate.

``stats.cycles`` is Ramulator 2's (memory cycles when the last request was accepted: exact on
all 56 reference cases); ``stats.cycles_drained`` is until every request completed (use it for
NMP timing). By default counts, latency, bandwidth and energy cover the whole (drained) run;
``stats.at_cycles`` has the counts at ``cycles``; ``replay(..., drain=False)`` stops there.

Timing NMP levels (streams confined to one rank / bank group / bank):

- ``encode_address(spec, rank=..., bankgroup=..., bank=..., row=..., column=...)`` builds
  addresses on one node; ``decode_address`` is its inverse.
- ``spec.with_org(ranks=1)`` (or ``bankgroups=1``, ``banks=1``) narrows the organization to the
  node a unit owns, so a stream is timed on that node alone.
- ``internal_view(spec, level)`` drops the constraints of the shared data buses above
  ``level`` from the timing table: ``"rank"`` drops the channel data bus and rank switching,
  ``"bankgroup"`` also the rank-level column-to-column rules (tCCD_S, turnarounds), ``"bank"``
  also turns bank-group column rules into per-bank ones. The table stays data:
  ``constraint_rows(spec.standard, spec.timing, spec.bus_level)`` lists what is enforced.
  Example: per-rank NMP units each read their own rank at full rate::

      rank_spec = internal_view(load_memory("ddr5-4800-40").with_org(ranks=1), "rank")
      replay(rank_stream_requests, rank_spec).cycles_drained

  (The shared C/A bus that delivers NMP instructions is not modeled here: it is a bandwidth
  limit the architecture layer accounts for.)
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nmp.memory.driver import replay, replay_lines
    from nmp.memory.mapping import decode_address, encode_address, parse_mapping
    from nmp.memory.spec import (
        Controller,
        Energy,
        MemorySpec,
        Organization,
        catalog_rows,
        internal_view,
        load_memory,
    )
    from nmp.memory.standards import build_table, constraint_rows, load_standard
    from nmp.memory.stats import MemStats, command_energy_pj
    from nmp.memory.trace import REQUEST_DTYPE, make_requests, read_trace, write_trace

# Each name loads its module on first use: `nmp replay` imports no numpy (the spec, the C
# engine's path: nmp.memory.text_replay), `nmp models` no engine (the driver loads numpy; the
# numba engine loads only where it runs).
_EXPORTS = {
    "replay": "driver",
    "replay_lines": "driver",
    "decode_address": "mapping",
    "encode_address": "mapping",
    "parse_mapping": "mapping",
    "Controller": "spec",
    "Energy": "spec",
    "MemorySpec": "spec",
    "Organization": "spec",
    "catalog_rows": "spec",
    "internal_view": "spec",
    "load_memory": "spec",
    "build_table": "standards",
    "constraint_rows": "standards",
    "load_standard": "standards",
    "MemStats": "stats",
    "command_energy_pj": "stats",
    "REQUEST_DTYPE": "trace",
    "make_requests": "trace",
    "read_trace": "trace",
    "write_trace": "trace",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nmp.memory' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)  # its own module
    globals()[name] = value
    return value


__all__ = [
    "REQUEST_DTYPE",
    "Controller",
    "Energy",
    "MemStats",
    "MemorySpec",
    "Organization",
    "build_table",
    "catalog_rows",
    "command_energy_pj",
    "constraint_rows",
    "decode_address",
    "encode_address",
    "internal_view",
    "load_memory",
    "load_standard",
    "make_requests",
    "parse_mapping",
    "read_trace",
    "replay",
    "replay_lines",
    "write_trace",
]
