"""engine.c builds as parts compiled side by side, then linked (``native_build._PARTS``): the
build compiles each of engine.c's parts once, and each part holds instantiations. The library
the other tests load is that build, so they check its results; here only its shape. Nothing
compiles here."""

from __future__ import annotations

import re

from nmp.memory import native_build


def _source() -> str:
    return native_build._SOURCE.read_text()


def test_the_build_compiles_each_part_of_engine_c_once() -> None:
    declared = int(re.search(r"#define ENGINE_PARTS (\d+)", _source()).group(1))
    assert sorted(native_build._PARTS) == list(range(1, declared + 1))


def test_every_part_holds_code_and_none_lies_past_the_last() -> None:
    used = {int(k) for k in re.findall(r"#if IN_PART\((\d+)\)", _source())}
    assert used == set(native_build._PARTS)


def test_the_exported_entry_points_lie_in_one_part() -> None:
    """The functions nmp calls (simulate_c ... ) are defined after the last part's guard, so
    that exactly one object file defines each (a duplicate would not link)."""
    text = _source()
    last = text.rindex(f"#if IN_PART({max(native_build._PARTS)})")
    for name in ("simulate_c", "simulate_sum_c", "simulate_many_c", "read_sums_c"):
        (definition,) = re.finditer(rf"^(?:int|void) {name}\(", text, re.MULTILINE)
        assert definition.start() > last, name


def test_the_parts_are_in_the_key() -> None:
    """Another split is another library: its key differs."""
    cc = native_build.compiler()
    key = native_build.library_key(cc)
    saved = native_build._PARTS
    try:
        native_build._PARTS = (*saved, 99)
        assert native_build.library_key(cc) != key
    finally:
        native_build._PARTS = saved


def test_parts_run_one_per_core_at_most() -> None:
    assert 1 <= native_build._part_jobs() <= len(native_build._PARTS)
