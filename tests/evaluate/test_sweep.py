"""Sweep files: structure checks, grid and random expansion, validation naming the key."""

from __future__ import annotations

import pytest
from evaluate_fakes import ToyProvider, toy_sweep

from nmp.errors import SpecError
from nmp.evaluate.sweep import expand, grid_size, parse_sweep
from nmp.evaluate.sweepcheck import validate_sweep


def test_grid_expansion_order_and_count() -> None:
    spec = toy_sweep()
    points = expand(spec)
    # a, b: 2 workloads x 3 batches; c-big: 2 workloads x 3 batches x 2 unit counts
    assert len(points) == 2 * 6 + 12 == grid_size(spec)
    assert [p.index for p in points] == list(range(len(points)))
    assert points[0].overrides == {"workload.batch": 1}
    assert (points[0].design, points[0].workload) == ("a", "w1")
    # last axis fastest: c-big's own axis varies before the sweep-wide batch
    cbig = [p for p in points if p.design == "c-big" and p.workload == "w1"]
    assert [(p.axes["workload.batch"], p.design_axes["arch.bank.units"]) for p in cbig] == [
        (1, 8),
        (1, 16),
        (32, 8),
        (32, 16),
        (128, 8),
        (128, 16),
    ]
    assert expand(toy_sweep()) == points  # deterministic


def test_random_sampling_is_seeded_and_covers_baselines() -> None:
    a = expand(toy_sweep(sampling="random", samples=7, seed=3))
    b = expand(toy_sweep(sampling="random", samples=7, seed=3))
    c = expand(toy_sweep(sampling="random", samples=7, seed=4))
    assert a == b
    assert [p.overrides for p in a] != [p.overrides for p in c]
    grid = expand(toy_sweep())
    configs = [(p.design, p.workload, p.overrides) for p in grid]
    sampled = [(p.design, p.workload, p.overrides) for p in a]
    assert len(set(map(repr, sampled))) == len(sampled)  # no point twice
    assert all(s in configs for s in sampled)
    # every sampled context has its baseline point
    contexts = {(p.workload, repr(p.axes)) for p in a}
    base = {(p.workload, repr(p.axes)) for p in a if p.design == "a"}
    assert contexts == base
    assert 7 <= len(a) <= 14


def test_toml_dotted_and_quoted_axis_keys_are_the_same() -> None:
    nested = toy_sweep(axes={"workload": {"batch": [1, 2]}})
    quoted = toy_sweep(axes={"workload.batch": [1, 2]})
    assert nested.axes == quoted.axes == {"workload.batch": [1, 2]}


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"axes": {"workload": {"batch": []}}}, "axes.workload.batch", "empty axis"),
        ({"axes": {"workload": {"batch": 4}}}, "axes.workload.batch", "array"),
        ({"axes": {"workload": {"batch": [1, 1]}}}, "axes.workload.batch", "duplicate"),
        ({"axes": {"wl": {"batch": [1]}}}, "axes.wl.batch", "must start with"),
        ({"baseline": "zzz"}, "baseline", "not a design"),
        ({"workloads": []}, "workloads", "at least one"),
        ({"objectives": {"speed": "max"}}, "objectives.speed", "unknown metric"),
        ({"sampling": "random"}, "samples", "samples"),
        ({"archs": ["a", "a"]}, "archs[1]", "twice"),
        ({"colour": 1}, "colour", "unknown key"),
    ],
)
def test_structural_errors_name_the_key(change: dict, key: str, words: str) -> None:
    with pytest.raises(SpecError) as err:
        toy_sweep(**change)
    assert err.value.key == key
    assert words in err.value.message
    assert err.value.file == "toy.toml"


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"axes": {"workload": {"bacth": [1]}}}, "axes.workload.bacth", "no field 'bacth'"),
        ({"axes": {"arch": {"bank": {"count": [1]}}}}, "axes.arch.bank.count", "no field 'count'"),
        ({"workloads": ["w1", "nope"]}, "workloads[1]", "unknown workload preset 'nope'"),
        ({"archs": ["a", "zz"]}, "archs[1]", "unknown arch preset 'zz'"),
        ({"memories": ["ddr9"]}, "memories[0]", "unknown memory preset"),
        (
            {"designs": [{"name": "x", "arch": "c", "set": {"arch.speed": "fast"}}]},
            "designs[0].set.arch.speed",
            "must be a number",
        ),
        # a value the spec's own validation rejects: found before running, naming the point
        (
            {"designs": [{"name": "x", "arch": "c", "axes": {"arch.bank.units": [4, 3]}}]},
            "designs[0].axes.arch.bank.units",
            "power of two",
        ),
        ({"axes": {"memory": {"ranks": [1]}}}, "axes.memory.ranks", "no DRAM memory spec"),
    ],
)
def test_validation_against_specs_names_the_key(change: dict, key: str, words: str) -> None:
    spec = toy_sweep(**change)
    with pytest.raises(SpecError) as err:
        validate_sweep(spec, file="toy.toml", provider=ToyProvider())
    assert words in err.value.message
    assert err.value.file == "toy.toml"
    assert err.value.key == key


def test_point_values_rejected_by_spec_name_the_axis_key() -> None:
    spec = toy_sweep(designs=[{"name": "x", "arch": "c", "axes": {"arch.bank.units": [4, 3]}}])
    with pytest.raises(SpecError) as err:
        validate_sweep(spec, file="toy.toml", provider=ToyProvider())
    assert err.value.key == "designs[0].axes.arch.bank.units"
    assert "point" in err.value.message and "units=3" in err.value.message


def test_keys_are_stable_and_distinct() -> None:
    keyed = validate_sweep(toy_sweep(), provider=ToyProvider())
    again = validate_sweep(toy_sweep(), provider=ToyProvider())
    assert [k for _, k in keyed] == [k for _, k in again]
    assert len({k for _, k in keyed}) == len(keyed)
    # the key is the resolved configuration: the same point from another sweep has the same key
    other = validate_sweep(toy_sweep(archs=["b"], baseline="b", designs=[]), provider=ToyProvider())
    by_cfg = {(p.design, p.workload, repr(p.overrides)): k for p, k in keyed}
    for p, k in other:
        assert by_cfg[(p.design, p.workload, repr(p.overrides))] == k


def test_parse_sweep_defaults() -> None:
    spec = parse_sweep({"workloads": ["w1"], "archs": ["a", "b"]}, file="x/my-sweep.toml")
    assert spec.name == "my-sweep"
    assert spec.baseline_label == "a"
    assert spec.objectives == {
        "lookups_per_s": "max",
        "energy_pj_per_lookup": "min",
        "area_mm2": "min",
    }


def test_linked_axis_sets_fields_together() -> None:
    linked = [
        {"arch": {"bank": {"units": 4}, "speed": 1.0}},
        {"arch": {"bank": {"units": 8}, "speed": 2.0}},
    ]
    spec = toy_sweep(designs=[{"name": "x", "arch": "c", "axes": {"bank": linked}}])
    points = [p for p in expand(spec) if p.design == "x" and p.workload == "w1"]
    assert [p.design_axes for p in points] == [
        {"arch.bank.units": 4, "arch.speed": 1.0},
        {"arch.bank.units": 8, "arch.speed": 2.0},
    ] * 3  # x 3 batch sizes, the design's own axis fastest
    assert points[1].overrides == {"workload.batch": 1, "arch.bank.units": 8, "arch.speed": 2.0}
    validate_sweep(spec, provider=ToyProvider())


def test_linked_axis_errors_name_the_step() -> None:
    bad = [{"arch.bank.units": 4}, {"arch.speed": 2.0}]
    with pytest.raises(SpecError) as err:
        toy_sweep(axes={"bank": bad})
    assert err.value.key == "axes.bank[1]" and "same fields" in err.value.message
    spec = toy_sweep(
        axes={"bank": [{"arch.bank.units": 4}, {"arch.bank.units": 1}]},
        archs=["a", "c"],
        designs=[],
    )
    with pytest.raises(SpecError) as err:  # rejected when the design is built (check_design)
        validate_sweep(spec, file="toy.toml", provider=ToyProvider())
    assert err.value.key == "axes.bank[1].arch.bank.units"
    assert "cannot serve" in err.value.message
