"""A table's element formats (``dtype``): each built-in by its bits, and a format registered at
run time taken by a workload, sized by the stages and held by the functional model's rows."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.arch.rowdata import RowStore, base_rows
from nmp.errors import NmpError
from nmp.workload import ELEMENT_FORMATS, ElementFormat, TableSpec, element_format, load_workload
from tests.bad_inputs import assert_one_line_error, main_in_process
from tests.test_extending import TOY, listed, registered, unknown_error


def test_each_builtin_format_has_its_bytes():
    assert {n: element_format(n).bytes for n in ELEMENT_FORMATS.names()} == {
        "float32": 4,
        "float16": 2,
        "bfloat16": 2,
        "int8": 1,
    }
    assert [n for n in ELEMENT_FORMATS.names() if element_format(n).holds_float32] == ["float32"]
    assert TableSpec(10, 64, "int8").row_bytes == 64
    assert TableSpec(10, 64, "bfloat16").row_bytes == 128


def test_each_builtin_format_stores_what_its_bits_hold():
    # 1 + 2^-8 + 2^-12: float16 keeps 10 fraction bits (1 + 2^-8); bfloat16 keeps 7 and
    # truncates: 1.0, where rounding to nearest gives 1 + 2^-7 (the rest is above half a step)
    x = np.array([1.0 + 2.0**-8 + 2.0**-12, 0.5, -0.25], dtype=np.float32)
    assert element_format("float32").stored(x) is x
    np.testing.assert_array_equal(element_format("float16").stored(x), [1.0 + 2.0**-8, 0.5, -0.25])
    np.testing.assert_array_equal(element_format("bfloat16").stored(x), [1.0, 0.5, -0.25])
    # int8: a fixed scale of 127 per unit, rounded to nearest even (63.5 -> 64, -31.75 -> -32)
    np.testing.assert_array_equal(element_format("int8").stored(x), [128.0, 64.0, -32.0])


class Float8(ElementFormat):
    """One byte an element; values rounded to 3 fraction bits (as e4m3 keeps)."""

    name = TOY
    description = "one byte, three fraction bits"
    bytes = 1

    def stored(self, values: np.ndarray) -> np.ndarray:
        mantissa, exponent = np.frexp(values)
        return np.ldexp(np.round(mantissa * 16.0) / 16.0, exponent).astype(np.float32)


def test_a_registered_format_is_a_workload_dtype():
    with registered(ELEMENT_FORMATS, Float8()):
        assert TOY in listed(ELEMENT_FORMATS)
        assert f", {TOY}" in unknown_error(ELEMENT_FORMATS)
        spec = load_workload("recross-eval", {"dtype": TOY, "dim": 16})
        assert {t.dtype for t in spec.tables} == {TOY}
        assert spec.tables[0].row_bytes == 16
        rows = np.arange(50, dtype=np.int64)
        held = RowStore(3, [16], [TOY], [100]).read(0, rows)
        exact = base_rows(3, 0, rows, 16)
        np.testing.assert_array_equal(held, Float8().stored(exact))
        assert not np.array_equal(held, exact)  # the hashed rows have more than 3 bits
        # a row can be read from the basis tables only where the format holds float32
        assert RowStore(3, [16], [TOY], [100]).basis(0) is None
    with pytest.raises(NmpError, match=f"unknown table dtype '{TOY}'"):
        load_workload("recross-eval", {"dtype": TOY})


def test_a_registered_format_moves_a_design_point_by_its_bytes():
    """The stages size rows by the format: a one-byte format runs as int8 does, not as
    float32 (64 elements: 64 bytes a row against 256)."""
    from nmp.evaluate.point import run_point

    sets = {"workload.batch": 8, "workload.dim": 64, "arch.memory.channels": 1}

    def point(dtype: str):
        r = run_point("recnmp", "recross-eval", None, {**sets, "workload.dtype": dtype})
        return r.latency_ns, r.energy_pj_per_lookup

    with registered(ELEMENT_FORMATS, Float8()):
        toy = point(TOY)
    assert toy == point("int8")
    wide = point("float32")
    assert toy[0] < wide[0] and toy[1] < wide[1]


def test_an_unknown_dtype_is_named_at_its_key(tmp_path, capsys, monkeypatch):
    proc = main_in_process(
        ["run", "--arch", "recnmp", "--workload", "recross-eval", "--set", "workload.dtype=fp8"],
        tmp_path,
        capsys,
        monkeypatch,
    )
    assert_one_line_error(
        proc, "key 'workload.dtype': unknown table dtype 'fp8' (known: float32, float16"
    )
    path = tmp_path / "w.toml"
    path.write_text('name = "w"\n[[tables]]\nrows = 50\ndim = 16\ndtype = "fp8"\n')
    proc = main_in_process(
        ["run", "--arch", "recnmp", "--workload", str(path)], tmp_path, capsys, monkeypatch
    )
    assert_one_line_error(proc, "key 'tables[0].dtype': unknown table dtype 'fp8'")
    assert "w.toml" in proc.stderr
