"""Synthesis figures: the cached report is current, and the figures behave physically."""

from __future__ import annotations

import json

import pytest

from nmp.rtl import synth
from nmp.rtl.parity import ParityUnitConfig

from .conftest import require_tool


def test_cached_report_is_current():
    require_tool("yosys")
    configs = synth.default_configs()
    # every yosys run side by side (nmp rtl report's path), and one alone as measure() runs it
    fresh = dict(zip(configs, synth.measure_all(configs), strict=True))
    assert synth.measure(configs[0]) == fresh[configs[0]]
    cached = json.loads(synth.CACHE_PATH.read_text())["figures"]
    assert set(cached) == {f.key for f in fresh.values()}, "run `python -m nmp.rtl.synth`"
    for fig in fresh.values():
        row = cached[fig.key]
        assert row["cells"] == fig.cells, f"{fig.key} stale: run `python -m nmp.rtl.synth`"
        assert row["pyrtl_area_mm2"] == pytest.approx(fig.pyrtl_area_mm2, rel=1e-9)
        assert row["critical_path_ps"] == pytest.approx(fig.critical_path_ps, rel=1e-9)


def test_figures_scale_with_width_and_gf():
    # the cached figures (checked current by the test above)
    by = {}
    for c in synth.default_configs():
        by[c.width, c.gf] = synth.parity_unit_figures(c.width, gf=c.gf)
    for gf in (False, True):
        cells = [by[w, gf].cells for w in synth.REPORT_WIDTHS]
        assert cells == sorted(cells) and cells[-1] > 4 * cells[0]  # ~linear in width
        # the forwarding loop (compare, mux, XOR) does not grow with width
        assert len({round(by[w, gf].critical_path_ps) for w in synth.REPORT_WIDTHS}) == 1
    for w in synth.REPORT_WIDTHS:
        assert by[w, True].cells > 2 * by[w, False].cells  # GF lanes cost real logic
        assert by[w, True].fmax_mhz <= by[w, False].fmax_mhz  # flat GF lanes: no slower loop


def test_parity_unit_figures_reads_the_cache_and_scales():
    fig = synth.parity_unit_figures(256, gf=True)
    cached = json.loads(synth.CACHE_PATH.read_text())["figures"][fig.key]
    assert fig.cells == cached["cells"]
    at65 = synth.parity_unit_figures(256, gf=True, tech_nm=65)
    assert at65.pyrtl_area_mm2 == pytest.approx(fig.pyrtl_area_mm2 / 4)
    assert at65.fmax_mhz == pytest.approx(fig.fmax_mhz * 2)


def test_uncached_config_is_measured():
    cfg = ParityUnitConfig(width=72, depth=64, stages=3)
    fig = synth.parity_unit_figures(72, depth=64, stages=3)
    assert (fig.width, fig.depth, fig.stages) == (cfg.width, cfg.depth, cfg.stages)
    assert fig.critical_path_ps > 0 and fig.pyrtl_area_mm2 > 0
