"""The studies of chosen values (papers/sensitivity-trimb-trimg, sensitivity-host-energy,
gpu-chosen, gpu-chosen-h200): each parses, moves the values its comments name, and the figure
it reports moves with each value as the mechanism says."""

from __future__ import annotations

import pytest

from nmp.errors import NmpError
from nmp.evaluate.point import run_point
from nmp.evaluate.sensitivity import parse_params
from nmp.evaluate.study import load_custom_study

# the default sweep's memory for the near-memory designs and the host (ReCross's DDR5 setup)
MEMORY = {"arch.memory.preset": "ddr5-4800-40", "arch.memory.channels": 1, "arch.memory.ranks": 2}


def _setup(name: str):
    study = load_custom_study(f"papers/{name}")
    assert study is not None and study.runner == "nmp.evaluate.sensitivity:run_study"
    return parse_params(study.params)


def test_sensitivity_studies_of_chosen_values_parse() -> None:
    trim = _setup("sensitivity-trimb-trimg")
    assert (trim.design, trim.reference, trim.metric) == ("trim-b", "trim-g", "lookups_per_s")
    assert trim.set == MEMORY  # the default sweep's memory, so its ranking is the one tested
    energy = _setup("sensitivity-host-energy")
    assert (energy.design, energy.reference) == ("trim-g", "host-cpu")
    assert energy.metric == "energy_pj_per_lookup" and energy.set == MEMORY
    for setup in (trim, energy):
        assert all(a.source for a in setup.assumptions)  # every range says where it comes from
    keys = {k for a in trim.assumptions for k in a.low}
    assert {"arch.rank.clock_mhz", "arch.rank.lanes"} <= keys
    keys = {k for a in energy.assumptions for k in a.low}
    assert {"memory.energy.idd4r_ma", "memory.energy.io_pj_per_bit"} <= keys
    assert "memory.energy.bank_wise_rho" in keys  # DRAMPower's factor, and a datasheet set under it


def test_gpu_chosen_compares_the_two_kernels_of_one_preset() -> None:
    """Both sides are a100-80gb, one per kernel (design_set / reference_set), and each
    assumption moves one chosen value of the preset, for both kernels, at x0.5 and x2."""
    setup = _setup("gpu-chosen")
    assert (setup.design, setup.reference) == ("combined", "stock")
    combined, stock = setup.side("combined"), setup.side("stock")
    assert combined.arch == stock.arch == "a100-80gb"
    assert (combined.set, stock.set) == ({"arch.variant": "combined"}, {"arch.variant": "baseline"})
    assert setup.set == {"workload.reuse": "high"}
    nominal = {
        "arch.hbm.read_queue": 128,
        "arch.hbm.channel_interleave_bytes": 128,
        "arch.l1.bytes_per_cycle": 128.0,
        "arch.l2.fetch_bytes": 64,
        "arch.kernel.prefetch_regs_per_lookup": 3,
    }
    moved = {}
    for a in setup.assumptions:
        assert set(a.designs) == {"combined", "stock"}
        ((key, low),) = a.low.items()
        ((key_high, high),) = a.high.items()
        assert key == key_high
        moved[key] = (low, high)
    assert set(moved) == set(nominal)
    for key, (low, high) in moved.items():
        if key != "arch.kernel.prefetch_regs_per_lookup":  # (2 and 6: whole registers)
            assert (low, high) == (nominal[key] / 2, nominal[key] * 2)


def test_trim_b_buffer_chip_unit_binds_below_its_nominal_clock() -> None:
    """TRiM-B's buffer-chip unit adds lanes x clock FP32 per second; at 300 MHz x 16 lanes that
    is the rank bus's 19.2 GB/s of partial sums, so halving the clock halves the throughput,
    doubling it gains nothing (the bus binds), and the lanes trade one for one with it."""
    nominal = run_point("trim-b", "recross-eval", overrides=MEMORY).lookups_per_s

    def ratio(**over) -> float:
        res = run_point("trim-b", "recross-eval", overrides={**MEMORY, **over})
        return res.lookups_per_s / nominal

    half = ratio(**{"arch.rank.clock_mhz": 150.0})
    assert half == pytest.approx(0.5, rel=0.01)
    assert ratio(**{"arch.rank.clock_mhz": 600.0}) == pytest.approx(1.0, abs=0.01)
    assert ratio(**{"arch.rank.lanes": 8}) == pytest.approx(half, rel=1e-6)


def test_off_chip_io_energy_is_linear_and_favours_the_near_memory_design() -> None:
    """The I/O energy is io_pj_per_bit x the bits crossing the pins: each design's energy per
    lookup is linear in it, and the host (every row it reads from DRAM crosses to the CPU)
    gains more from cheaper I/O than TRiM-G (whose rows stop at the buffer chip), so the
    host / TRiM-G energy ratio rises with the I/O energy (sensitivity-host-energy)."""

    def energy(arch: str, pj: float) -> float:
        over = {**MEMORY, "memory.energy.io_pj_per_bit": pj}
        return run_point(arch, "recross-eval", overrides=over).energy_pj_per_lookup

    ratios = []
    for arch in ("host-cpu", "trim-g"):
        e2, e4, e8 = (energy(arch, pj) for pj in (2.0, 4.0, 8.0))
        assert e8 - e4 == pytest.approx(2 * (e4 - e2), rel=1e-9)
        assert e2 < e4 < e8
        ratios.append((e2, e4, e8))
    host, trim = ratios
    saving = [h / t for h, t in zip(host, trim, strict=True)]
    assert saving[0] < saving[1] < saving[2]


@pytest.mark.slow
def test_combined_kernel_gains_more_with_a_deeper_hbm_read_queue() -> None:
    """The combined kernel keeps more loads in flight than the stock one; how many of them HBM
    serves at once is capped by the controller's read queue (chosen 128, gpu-chosen), so its
    speedup over the stock kernel rises with the queue's depth."""

    def speedup(queue: int) -> float:
        runs = [
            run_point(
                "a100-80gb",
                "gpu-micro24",
                overrides={
                    "workload.reuse": "high",
                    "arch.variant": variant,
                    "arch.hbm.read_queue": queue,
                },
            ).lookups_per_s
            for variant in ("combined", "baseline")
        ]
        return runs[0] / runs[1]

    gains = [speedup(q) for q in (64, 128, 256)]
    assert gains[0] < gains[1] < gains[2]


def test_gpu_chosen_h200_moves_the_h200_presets_chosen_values() -> None:
    """gpu-chosen on the H200: both sides the h200 preset, one per kernel, and each assumption
    x0.5 and x2 of the value models/gpu/h200.toml holds (a preset change shows here)."""
    from nmp.gpu import load_gpu

    setup = _setup("gpu-chosen-h200")
    assert setup.side("combined").arch == setup.side("stock").arch == "h200"
    gpu = load_gpu("h200")
    keys = set()
    for a in setup.assumptions:
        ((key, low),) = a.low.items()
        ((key_high, high),) = a.high.items()
        assert key == key_high and key.startswith("arch.")
        part, name = key.removeprefix("arch.").split(".")
        nominal = getattr(getattr(gpu, part), name)
        assert (low, high) == (nominal / 2, nominal * 2), key
        keys.add(key)
    assert {"arch.l2.bytes_per_cycle", "arch.hbm.read_queue", "arch.l1.bytes_per_cycle"} <= keys


@pytest.mark.slow
def test_h200_combined_kernel_is_held_by_the_l2_slices_request_rate() -> None:
    """On the H200 the combined kernel's loads are mostly L2 hits: at the chosen L2 bandwidth
    the slices' measured request rate binds, so doubling the bytes gains nothing; halving them
    makes the byte queue the longer, and the kernel waits there (gpu-chosen-h200's largest bar)."""

    def run(bytes_per_cycle: float):
        over = {
            "workload.reuse": "high",
            "arch.variant": "combined",
            "arch.l2.bytes_per_cycle": bytes_per_cycle,
        }
        return run_point("h200", "gpu-micro24", overrides=over)

    nominal, double, half = run(5120.0), run(10240.0), run(2560.0)
    assert set(nominal.breakdown["tables_bound_by"]) == {"l2_requests"}
    assert double.lookups_per_s == pytest.approx(nominal.lookups_per_s, rel=1e-3)
    assert half.lookups_per_s < 0.85 * nominal.lookups_per_s
    queued = [r.breakdown["stall_ns"]["l2_queueing"] for r in (half, nominal)]
    assert queued[0] > 2.0 * queued[1]


def test_a_datasheet_set_runs_under_the_bank_wise_model_and_costs_more() -> None:
    """Micron's 16Gb DDR5 currents (IDD3N above IDD0) are refused at rho 1 and run below it
    (the study's assumption); TRiM-G reads 8.9x the host's DRAM bytes, so the larger read and
    activation currents raise its energy per lookup more than the host's."""
    setup = _setup("sensitivity-host-energy")
    (micron,) = [a for a in setup.assumptions if "Micron" in a.name]
    assert micron.low["memory.energy.bank_wise_rho"] == 0.0
    assert micron.high["memory.energy.bank_wise_rho"] == 0.5

    def energy(design: str, over: dict) -> float:
        return run_point(design, "recross-eval", overrides={**MEMORY, **over}).energy_pj_per_lookup

    ratio = energy("host-cpu", micron.high) / energy("trim-g", micron.high)
    nominal = energy("host-cpu", {}) / energy("trim-g", {})
    assert ratio < nominal < 1.0
    with pytest.raises(NmpError, match="idd0_ma"):
        energy("trim-g", {**micron.high, "memory.energy.bank_wise_rho": 1.0})
