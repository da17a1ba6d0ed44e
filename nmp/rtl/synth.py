"""Area and clock of the parity unit: yosys cell count, PyRTL area estimate, PyRTL timing.

All figures are for the datapath *without* the parity memory (an SRAM macro, sized by the
memory model): :func:`~nmp.rtl.parity.build_datapath`. PyRTL's estimates are calibrated to a
130 nm standard-cell library (vsclib013); :meth:`RtlFigures.at_node` rescales them by Dennard
scaling (area x s^2, delay x s), which is optimistic below ~65 nm (no wire delay).

The critical path (checked, issue 25: it reads 856 ps for XOR and GF(2^8) at every width) is the
read-modify-write hazard path of the parity core, :func:`critical_path`: from the ``h1_addr``
register, the address compare of the word being written with the one being read (log2(depth)
bits), the forwarding mux, the XOR with the delta, the clear-sweep mux, into the parity memory's
write port (``wr_data``; the SRAM's own setup is not in the figure) and the ``h1_data``
register. It depends on the depth (777 ps at 16 words, 856 at 1024, 897 at 65536) and not on the
width, because PyRTL's timing model gives a bitwise operator the same delay at any width (the
bits work in parallel) and has no fanout or wire load: the forwarding select drives ``width``
mux bits, which a real netlist buffers (about log4(width) more gate delays: optimistic at 512
bits). The GF(2^8) multiply does not lengthen it: it has a pipeline stage of its own in the
delta unit (774 ps into ``s2_delta`` at 512 bits).

:func:`parity_unit_figures` is what the architecture models call: it answers from the small
cache ``nmp/rtl/data/parity_report.json`` (kept current by a test) and computes on a miss.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path

import pyrtl

from nmp.errors import NmpError
from nmp.rtl.parity import ParityUnitConfig, build_datapath
from nmp.rtl.verilog import fresh_names

PYRTL_TECH_NM = 130.0
CACHE_PATH = Path(__file__).with_name("data") / "parity_report.json"
REPORT_WIDTHS = (64, 128, 256, 512)
REPORT_DEPTH = 1024  # parity words per unit; sets only the address width of the datapath
REPORT_STAGES = 2


@dataclass(frozen=True)
class RtlFigures:
    """Synthesis and timing figures of one parity-unit datapath (memory excluded)."""

    width: int
    depth: int
    stages: int
    gf: bool
    input_mode: str
    cells: int | None  # yosys `synth; stat` cell count (None: yosys not run)
    pyrtl_area_mm2: float  # PyRTL area estimate of the logic, at tech_nm
    critical_path_ps: float  # PyRTL timing analysis, at tech_nm
    fmax_mhz: float  # 1 / (critical path + flip-flop setup and clock-to-q), at tech_nm
    tech_nm: float = PYRTL_TECH_NM

    @property
    def key(self) -> str:
        return _key(self.width, self.depth, self.stages, self.gf, self.input_mode)

    def at_node(self, tech_nm: float) -> RtlFigures:
        """The same design at another node by Dennard scaling (area s^2, delay s)."""
        s = tech_nm / self.tech_nm
        return replace(
            self,
            pyrtl_area_mm2=self.pyrtl_area_mm2 * s * s,
            critical_path_ps=self.critical_path_ps * s,
            fmax_mhz=self.fmax_mhz / s,
            tech_nm=tech_nm,
        )

    def to_dict(self) -> dict:
        return asdict(self)


def _key(width: int, depth: int, stages: int, gf: bool, input_mode: str) -> str:
    return f"{'gf' if gf else 'xor'}-{input_mode}-w{width}-d{depth}-s{stages}"


def yosys_available() -> bool:
    return shutil.which("yosys") is not None


def yosys_cells(cfg: ParityUnitConfig) -> tuple[int, dict[str, int]]:
    """``yosys synth -top <name>; stat`` on the datapath: total cells and cells per type."""
    if not yosys_available():
        raise NmpError("yosys is not installed; it is needed for the cell count")

    with tempfile.TemporaryDirectory() as tmp:
        return _Yosys(cfg, build_datapath(cfg), Path(tmp)).result()


class _Yosys:
    """One ``yosys synth; stat`` run on a datapath, started at once in ``tmp``; :meth:`result`
    waits for it. Several run side by side (``nmp rtl report``: one per width and code)."""

    def __init__(self, cfg: ParityUnitConfig, block: pyrtl.Block, tmp: Path) -> None:
        fresh_names()
        buf = io.StringIO()
        pyrtl.output_to_verilog(buf, block=block, module_name=cfg.name)
        src = tmp / "datapath.v"
        src.write_text(buf.getvalue())
        self.cfg, self.stat, self.err = cfg, tmp / "stat.txt", tmp / "stderr.txt"
        cmd = f"read_verilog {src}; synth -top {cfg.name}; tee -q -o {self.stat} stat"
        with open(self.err, "w") as err:  # a file, not a pipe: waiting never blocks yosys
            self.proc = subprocess.Popen(
                ["yosys", "-q", "-p", cmd], stdout=subprocess.DEVNULL, stderr=err
            )

    def result(self) -> tuple[int, dict[str, int]]:
        if self.proc.wait() != 0:
            err = self.err.read_text(errors="replace")
            raise NmpError(f"yosys failed on {self.cfg.name}: {err.strip()[-500:]}")
        return _parse_stat(self.stat.read_text(), self.cfg)


def _parse_stat(text: str, cfg: ParityUnitConfig) -> tuple[int, dict[str, int]]:
    total = re.search(r"Number of cells:\s+(\d+)", text)
    if total is None:
        raise NmpError(f"no cell count in yosys stat output for {cfg.name}")
    types = {
        m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\$\S+)\s+(\d+)\s*$", text, re.M)
    }
    return int(total.group(1)), types


def pyrtl_figures(
    cfg: ParityUnitConfig, block: pyrtl.Block | None = None
) -> tuple[float, float, float]:
    """(logic area mm^2, critical path ps, fmax MHz) at 130 nm from PyRTL's analyses (of
    ``block``, the datapath of ``cfg`` already built, else built here)."""
    block = build_datapath(cfg) if block is None else block
    logic_mm2, _ = pyrtl.area_estimation(tech_in_nm=PYRTL_TECH_NM, block=block)
    timing = pyrtl.TimingAnalysis(block)
    return float(logic_mm2), float(timing.max_length()), float(timing.max_freq(PYRTL_TECH_NM))


def critical_path(cfg: ParityUnitConfig) -> tuple[float, list[str], list[str]]:
    """(length ps at 130 nm, the registers and outputs it ends in, the operators along it) of the
    datapath's longest path, from PyRTL's timing analysis."""
    block = build_datapath(cfg)
    pyrtl.set_working_block(block)  # critical_path walks the working block
    timing = pyrtl.TimingAnalysis(block)
    paths = timing.critical_path(print_cp=False)
    nets = paths[0][-1] if paths else []
    # where the path ends: the registers and outputs its last wire feeds, through plain
    # assignments ('w'); PyRTL wires compare by value, so they are matched by identity
    frontier = list(nets[-1].dests) if nets else []
    ends: set[str] = set()
    for _ in range(8):
        nxt = []
        for wire in frontier:
            feeds = [n for n in block.logic if n.op in "wr" and any(a is wire for a in n.args)]
            if not feeds:
                ends.add(wire.name)
            for n in feeds:
                if n.op == "r":
                    ends.add(n.dests[0].name)
                else:
                    nxt.append(n.dests[0])
        if not nxt:
            break
        frontier = nxt
    return float(timing.max_length()), sorted(ends), [n.op for n in nets]


def measure(cfg: ParityUnitConfig, *, with_yosys: bool = True) -> RtlFigures:
    """Compute the figures of ``cfg`` now (yosys takes ~1-10 s per configuration)."""
    cells = yosys_cells(cfg)[0] if with_yosys else None
    area, cp, fmax = pyrtl_figures(cfg)
    return RtlFigures(
        cfg.width, cfg.depth, cfg.stages, cfg.gf, cfg.input_mode, cells, area, cp, fmax
    )


def measure_all(cfgs: list[ParityUnitConfig], *, with_yosys: bool = True) -> list[RtlFigures]:
    """:func:`measure` of each of ``cfgs``, the same figures: every datapath built once, its
    yosys run started at once (up to one per CPU side by side) and PyRTL's analyses done on
    it while yosys works."""
    import os

    slots = max(1, len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else 1
    # the longest runs first (yosys on GF(2^8) at 512 bits takes about half of the total)
    order = sorted(range(len(cfgs)), key=lambda i: (cfgs[i].gf, cfgs[i].width), reverse=True)
    runs: dict[int, _Yosys] = {}
    started: list[int] = []
    pyrtl_figs: dict[int, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for i in order:
                cfg = cfgs[i]
                block = build_datapath(cfg)
                if with_yosys:
                    while sum(runs[j].proc.poll() is None for j in started) >= slots:
                        time.sleep(0.02)  # `slots` at once: the next starts as one ends
                    folder = Path(tmp) / str(i)
                    folder.mkdir()
                    runs[i] = _Yosys(cfg, block, folder)
                    started.append(i)
                pyrtl_figs[i] = pyrtl_figures(cfg, block)
            out = []
            for i, cfg in enumerate(cfgs):
                cells = runs[i].result()[0] if with_yosys else None
                area, cp, fmax = pyrtl_figs[i]
                out.append(
                    RtlFigures(
                        cfg.width,
                        cfg.depth,
                        cfg.stages,
                        cfg.gf,
                        cfg.input_mode,
                        cells,
                        area,
                        cp,
                        fmax,
                    )
                )
        finally:  # a failed run or ^C leaves no yosys behind (its folder is being removed)
            for run in runs.values():
                if run.proc.poll() is None:
                    run.proc.kill()
                    run.proc.wait()
    return out


def default_configs() -> list[ParityUnitConfig]:
    """The configurations whose figures are cached: every report width, XOR and GF."""
    return [
        ParityUnitConfig(width=w, depth=REPORT_DEPTH, stages=REPORT_STAGES, gf=gf)
        for gf in (False, True)
        for w in REPORT_WIDTHS
    ]


@lru_cache(maxsize=1)
def _load_cache() -> dict[str, dict]:
    if not CACHE_PATH.exists():
        return {}
    return json.loads(CACHE_PATH.read_text())["figures"]


def write_cache(figures: list[RtlFigures], path: Path = CACHE_PATH) -> None:
    doc = {
        "about": "nmp rtl report figures of the parity-unit datapath (no parity memory); "
        "regenerate with `python -m nmp.rtl.synth`; tests/rtl checks it is current",
        "figures": {f.key: f.to_dict() for f in figures},
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    _load_cache.cache_clear()


def parity_unit_figures(
    width: int = 64,
    *,
    gf: bool = False,
    depth: int = REPORT_DEPTH,
    stages: int = REPORT_STAGES,
    input_mode: str = "delta",
    tech_nm: float = PYRTL_TECH_NM,
) -> RtlFigures:
    """Area and clock of one parity unit (cached figures; computed on a miss, which needs
    yosys for the cell count: without it ``cells`` is None)."""
    cfg = ParityUnitConfig(width=width, depth=depth, stages=stages, gf=gf, input_mode=input_mode)
    hit = _load_cache().get(_key(width, depth, stages, gf, input_mode))
    fig = RtlFigures(**hit) if hit else measure(cfg, with_yosys=yosys_available())
    return fig if tech_nm == fig.tech_nm else fig.at_node(tech_nm)


if __name__ == "__main__":  # regenerate the cache
    write_cache(measure_all(default_configs()))
    print(f"wrote {CACHE_PATH}")
