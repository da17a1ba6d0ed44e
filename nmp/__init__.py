"""nmp: near-memory-processing hardware modeling and co-design kit for DLRM embeddings.

The public Python API (stable: names here keep their meaning across versions; everything else
is internal and may move). Heavy parts (numba, torch, pyrtl) load on first use of a name, so
``import nmp`` and ``nmp --help`` stay fast. The tutorials in ``examples/`` use only these.

Memory (:mod:`nmp.memory`)
    ``load_memory(preset, channels=, ranks=, mapping=, overrides=)`` -> MemorySpec;
    ``replay(trace_or_requests, spec)`` -> MemStats (Ramulator-2-exact cycles, row hits,
    energy); ``make_requests(addr, write, arrival)``, ``read_trace(path)``.
Design points (:mod:`nmp.evaluate`, :mod:`nmp.arch`, :mod:`nmp.gpu`)
    ``run_point(arch, workload, memory=None, overrides={"workload.batch": 8})`` -> PointResult
    (``lookups_per_s``, ``energy_pj_per_lookup``, ``area_mm2``, ``latency_ns``, ``breakdown``;
    ``.to_json()``); ``load_arch(name)`` -> Architecture (``bind``, ``gather_reduce``,
    ``parity_update``, ``parity_consistent``, ``recover_node``).
Workloads (:mod:`nmp.workload`)
    ``load_workload(name, overrides)``, ``generate_batch(spec, seed)``.
Erasure codes (:mod:`nmp.coding`)
    ``XorCode(k)``, ``ReedSolomonCode(k, r)``: ``encode``, ``update_delta``, ``decode``.
Sweeps (:mod:`nmp.evaluate`)
    ``parse_sweep(mapping)``, ``validate_sweep(sweep)``, ``run_sweep(sweep, keyed, run_dir)``.
Training (:mod:`nmp.train`)
    ``TrainConfig(...)``, ``Failure(step, node)``, ``run_training(cfg, strategy, failures)``
    -> RunResult (``metrics``, ``final_state_sha256``, ``ledger``).
Errors
    ``NmpError`` (``SpecError``, ``TraceError``): one-line messages naming file, line and key.
"""

from nmp.errors import NmpError, SpecError, TraceError
from nmp.version import __version__

# name -> (module, attribute): imported on first access (PEP 562)
_LAZY = {
    "load_memory": ("nmp.memory", "load_memory"),
    "replay": ("nmp.memory", "replay"),
    "make_requests": ("nmp.memory", "make_requests"),
    "read_trace": ("nmp.memory", "read_trace"),
    "run_point": ("nmp.evaluate.point", "run_point"),
    "load_arch": ("nmp.arch", "load_arch"),
    "load_workload": ("nmp.workload", "load_workload"),
    "generate_batch": ("nmp.workload", "generate_batch"),
    "XorCode": ("nmp.coding", "XorCode"),
    "ReedSolomonCode": ("nmp.coding", "ReedSolomonCode"),
    "parse_sweep": ("nmp.evaluate.sweep", "parse_sweep"),
    "validate_sweep": ("nmp.evaluate.sweepcheck", "validate_sweep"),
    "run_sweep": ("nmp.evaluate.runner", "run_sweep"),
    "TrainConfig": ("nmp.train.config", "TrainConfig"),
    "Failure": ("nmp.train.failures", "Failure"),
    "run_training": ("nmp.train.trainer", "run"),
}

__all__ = ["NmpError", "SpecError", "TraceError", "__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nmp' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(__all__)
