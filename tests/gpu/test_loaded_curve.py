"""A recorded loaded-latency curve as the model's queues (nmp.gpu.queues): synthetic records in
tmp_path, the model's own curve, a steeper one, malformed ones, and the CLI's error."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from nmp.errors import NmpError
from nmp.gpu import latency_probe as lp
from nmp.gpu import queues
from nmp.gpu.spec import load_gpu

WARPS = (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64)
CHAINS = (1, 2, 4)
STEPS = 16
# Two waves of the stock kernel (a full one at 48 warps x 2 rows per SM, a partial one), one of
# the occupancy kernel: the load where the curve's shape decides the occupancy gain.
WL = {"num_tables": 1, "batch": 2048, "reuse": "random"}


@pytest.fixture(scope="module")
def h200():
    return load_gpu("h200", ONE_ROW)  # the stage's configuration (below)


@pytest.fixture(scope="module")
def model_points(h200):
    """The model's own probe curve (128-B rows, both levels), as --record writes points."""
    out = []
    for p in lp.points(warps=WARPS, chains=CHAINS, row_bytes=(128,)):
        m = lp.predict(h200, p, STEPS)
        out.append(
            {
                "level": p.level,
                "warps_per_sm": p.warps_per_sm,
                "chains": p.chains,
                "row_bytes": p.row_bytes,
                "latency_ns": m["latency_ns"],
                "gbps": m["gbps"],
                "requests_per_s": m["requests_per_s"],
            }
        )
    return out


def steeper(points: list[dict], factor: float) -> list[dict]:
    """Each level's rise above its lightest latency times ``factor``, the loads in flight kept
    (Little's law: requests/s scaled by old / new latency)."""
    out = []
    for level in ("hbm", "l2"):
        pts = [p for p in points if p["level"] == level]
        base = min(p["latency_ns"] for p in pts)
        for p in pts:
            lat = base + factor * (p["latency_ns"] - base)
            out.append(
                dict(p, latency_ns=lat, requests_per_s=p["requests_per_s"] * p["latency_ns"] / lat)
            )
    return out


def write(tmp_path: Path, points: list[dict], name: str = "rec.json", **top) -> Path:
    rec = {
        "kind": lp.RECORD_KIND,
        "gpu_name": "NVIDIA H200",
        "arch_preset": "h200",
        "date": "2026-11-29",
        "steps": STEPS,
        "points": points,
        **top,
    }
    path = tmp_path / name
    path.write_text(json.dumps(rec))
    return path


# The occupancy variant as a one-row hand-written build (64 rows in flight per SM against the
# stock kernel's 96): the case where a curve steep near its asymptote costs the stock kernel
# more. The h200 preset's NVRTC 13.0 build keeps more rows in flight than the stock kernel.
# The slices at the preset's former request rate (35.25 G/s), where the stage's load sits
# between the probe's points: these tests are about the curve, not the preset's rates.
ONE_ROW = {
    "kernel.handwritten_loads_in_flight": 1.0,
    "kernel.handwritten_index_batch": 1,
    "l2.requests_per_ns": 35.25,
}


def stage(record: str = "", variant: str = "baseline"):
    from nmp.gpu import run_design_point

    arch = {"hbm.loaded_latency_record": record, "variant": variant, **ONE_ROW}
    over = {"arch": arch, "workload": WL}
    return run_design_point("h200", "gpu-micro24", overrides=over)


@pytest.fixture(scope="module")
def modeled():
    return {v: stage(variant=v) for v in ("baseline", "occupancy")}


def test_default_is_the_modeled_curve(modeled):
    assert modeled["baseline"].breakdown["loaded_latency_curve"] == {"source": "modeled"}


def test_the_models_own_curve_leaves_the_stage_unchanged(tmp_path, model_points, modeled):
    path = write(tmp_path, model_points)
    for variant in ("baseline", "occupancy"):
        r = stage(str(path), variant)
        # Linear between the probe's points of the model's own (convex) curve, K > 1 points
        # less their wait for the slowest: within 0.3 %.
        assert r.latency_ns == pytest.approx(modeled[variant].latency_ns, rel=3e-3), variant
    src = r.breakdown["loaded_latency_curve"]
    assert src["source"] == "record" and src["file"] == str(path)
    assert src["gpu_name"] == "NVIDIA H200" and src["date"] == "2026-11-29"
    loads = len({_n(p) for p in model_points if p["level"] == "hbm"})  # 27 points, 19 loads
    assert src["points"] == {"l2": loads, "hbm": loads} and src["row_bytes"] == 128


def test_predict_reproduces_the_record(tmp_path, h200, model_points):
    # K = 1 at every W, both levels: a steeper rise of K > 1 points would also steepen their
    # wait for the slowest, and equal loads in flight would no longer share one mean.
    pts = [p for p in steeper(model_points, 1.5) if p["chains"] == 1]
    gpu = replace(h200, hbm=replace(h200.hbm, loaded_latency_record=str(write(tmp_path, pts))))
    kept = 0
    for p in pts:
        probe = lp.ProbePoint(p["level"], p["warps_per_sm"], p["chains"], p["row_bytes"])
        got = lp.predict(gpu, probe, STEPS)["latency_ns"]
        lighter = [q for q in pts if q["level"] == p["level"] and _n(q) < _n(p)]
        if all(q["requests_per_s"] < p["requests_per_s"] for q in lighter):
            assert got == pytest.approx(p["latency_ns"], rel=1e-4), probe.key
            kept += 1
        else:  # past the record's peak throughput, which then bounds the time (its ceiling)
            peak = max(q["requests_per_s"] for q in lighter)
            assert got < p["latency_ns"]
            assert got == pytest.approx(p["latency_ns"] * p["requests_per_s"] / peak, rel=1e-4)
    assert kept >= 12


def _n(p: dict) -> int:
    return p["warps_per_sm"] * p["chains"]


def linear_hbm(points: list[dict], n0: float) -> list[dict]:
    """The hbm level's latency rising linearly from the lightest point with the loads in flight
    per SM ``N`` (doubled at ``N = n0``), loads in flight kept: steep already at light loads."""
    base = min(p["latency_ns"] for p in points if p["level"] == "hbm" and p["chains"] == 1)
    spread = load_gpu("h200").hbm.latency_spread_ns  # K chains wait for the slowest of K
    out = []
    for p in points:
        slowest = spread * sum(1.0 / k for k in range(2, p["chains"] + 1))
        lat = base * (1.0 + _n(p) / n0) + slowest if p["level"] == "hbm" else p["latency_ns"]
        out.append(
            dict(p, latency_ns=lat, requests_per_s=p["requests_per_s"] * p["latency_ns"] / lat)
        )
    return out


def gain(base, occ) -> float:
    return base.latency_ns / occ.latency_ns - 1.0


def test_a_steeper_curve_slows_the_stage_and_its_shape_moves_the_occupancy_gain(
    tmp_path, model_points, modeled
):
    modeled_gain = gain(modeled["baseline"], modeled["occupancy"])
    path = str(write(tmp_path, steeper(model_points, 1.5)))
    base, occ = stage(path), stage(path, "occupancy")
    assert base.latency_ns > 1.04 * modeled["baseline"].latency_ns
    assert occ.latency_ns > 1.03 * modeled["occupancy"].latency_ns
    # 1.5 x the model's rise, which is steep only near the asymptote: the stock kernel's full
    # wave (96 rows in flight per SM) pays more than the occupancy kernel's (64), so the gain
    # grows; a rise already steep at light loads slows both alike and the gain shrinks.
    assert gain(base, occ) > modeled_gain + 0.005
    path = str(write(tmp_path, linear_hbm(model_points, 64.0), name="linear.json"))
    base, occ = stage(path), stage(path, "occupancy")
    assert base.latency_ns > 1.3 * modeled["baseline"].latency_ns
    assert gain(base, occ) < modeled_gain - 0.05


def _bad(tmp_path, model_points, case: str) -> Path:
    pts = [dict(p) for p in model_points]
    if case == "json":
        path = tmp_path / "bad.json"
        path.write_text("{not json")
        return path
    if case == "missing":
        del pts[3]["latency_ns"]
    elif case == "nan":
        pts[3]["latency_ns"] = float("nan")
    elif case == "negative":
        pts[3]["requests_per_s"] = -1.0
    elif case == "monotone":
        # The hbm curve's heaviest load made faster than its lightest (rate kept by Little).
        hbm = [p for p in pts if p["level"] == "hbm"]
        p = hbm[-1]
        p["requests_per_s"] *= p["latency_ns"] / 100.0
        p["latency_ns"] = 100.0
    elif case == "no128":
        pts = [dict(p, row_bytes=32) for p in pts]
    elif case == "little":
        pts[3]["requests_per_s"] *= 2.0
    return write(tmp_path, pts, name=f"{case}.json")


@pytest.mark.parametrize(
    "case,message",
    [
        ("json", "not a JSON latency-probe record"),
        ("missing", "key 'points[3].latency_ns' missing"),
        ("nan", "key 'points[3].latency_ns' must be a finite number > 0"),
        ("negative", "key 'points[3].requests_per_s' must be a finite number > 0"),
        ("monotone", "non-monotone hbm curve"),
        ("little", "Little's law"),
        ("no128", "key 'points': no point of 128-B rows"),
    ],
)
def test_malformed_records_are_one_line_errors(tmp_path, model_points, case, message):
    path = _bad(tmp_path, model_points, case)
    with pytest.raises(NmpError) as err:
        stage(str(path))
    text = str(err.value)
    assert message in text and str(path) in text and "\n" not in text


def test_a_record_of_another_gpu_is_refused_unless_forced(tmp_path, model_points, h200):
    path = write(tmp_path, model_points, gpu_name="NVIDIA A100-SXM4-80GB")
    with pytest.raises(NmpError, match="key 'gpu_name': recorded on 'NVIDIA A100-SXM4-80GB'"):
        stage(str(path))
    gpu = replace(
        h200, hbm=replace(h200.hbm, loaded_latency_record=str(path), loaded_latency_any_gpu=True)
    )
    probe = lp.ProbePoint("hbm", 1, 1, 128)
    assert lp.predict(gpu, probe, STEPS)["latency_ns"] == pytest.approx(
        lp.predict(h200, probe, STEPS)["latency_ns"], rel=1e-3
    )


def test_cli_names_the_bad_record(tmp_path, capsys):
    from nmp.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    args = ["run", "--arch", "h200", "--workload", "gpu-micro24"]
    args += ["--set", "workload.num_tables=1", "--set", "workload.batch=256"]
    args += ["--set", f"arch.hbm.loaded_latency_record={bad}"]
    assert main(args) != 0
    assert f"{bad}: a latency-probe record is a JSON object" in capsys.readouterr().err


def test_a_bare_name_is_a_file_in_the_data_folder(tmp_path, monkeypatch, model_points):
    from nmp.gpu import queues

    write(tmp_path, model_points, name="latency-probe-h200-NVIDIA-H200-2026-11-29.json")
    monkeypatch.setattr(queues, "DATA_DIR", tmp_path)
    name = "latency-probe-h200-NVIDIA-H200-2026-11-29.json"
    assert queues.record_path(name) == tmp_path / name
    assert queues.record_path("elsewhere/x.json") == Path("elsewhere/x.json")
    with pytest.raises(NmpError, match="no-such.json: key 'hbm.loaded_latency_record': cannot"):
        stage("no-such.json")


def test_validate_compares_the_modeled_curve_even_when_a_record_calibrates(tmp_path, h200):
    """nmp validate's gpu.latency: the record against the model, never against itself."""
    pts: list[dict] = [
        {"level": "hbm", "warps_per_sm": w, "chains": k, "row_bytes": 128, "latency_ns": ns}
        for w, k, ns in ((64, 4, 2000.0), (1, 1, 500.0))
    ]
    for p in pts:
        p["requests_per_s"] = 132 * _n(p) / p["latency_ns"] * 1e9
    rec = json.loads(write(tmp_path, pts).read_text())
    gpu = replace(h200, hbm=replace(h200.hbm, loaded_latency_record=str(tmp_path / "rec.json")))
    rows = lp.compare_record(rec, gpu)
    assert [r["modeled_ns"] for r in rows] == [
        r["modeled_ns"] for r in lp.compare_record(rec, h200)
    ]
    assert all(r["verdict"] == "disagrees" for r in rows)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "deep", "huge"])
def test_a_record_that_is_no_small_json_file_is_refused_at_once(tmp_path, kind):
    """A named pipe given as hbm.loaded_latency_record hung `nmp run` (read_text waited for a
    writer), /dev/zero was read until the kernel killed the process (24 GB), and a record
    nested past the JSON parser's depth was "input nested too deeply", naming no file."""
    from tests.bad_inputs import nmp_error_in_child

    path = tmp_path / "record.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        path.write_bytes(b" " * (queues.MAX_RECORD_BYTES + 1))
    done = nmp_error_in_child(
        "nmp.gpu.queues import read_record", "read_record(Path(sys.argv[1]))", path, timeout_s=30
    )
    assert done.stdout.startswith(f"{path}: "), done
    assert "\n" not in done.stdout.strip()
