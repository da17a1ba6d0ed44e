"""`nmp rtl export` and `nmp rtl report` from the command line."""

from __future__ import annotations

import json

from nmp.cli import main


def test_export_writes_module_and_testbench(tmp_path, capsys):
    assert (
        main(
            [
                "rtl",
                "export",
                "--width",
                "128",
                "--depth",
                "32",
                "--gf",
                "--out",
                str(tmp_path),
                "--entries",
                "20",
            ]
        )
        == 0
    )
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["nmp_parity_gf_w128_d32_s2.v", "nmp_parity_gf_w128_d32_s2_tb.v"]
    assert "nmp_parity_gf_w128_d32_s2.v" in capsys.readouterr().out


def test_bad_width_is_a_clean_error(tmp_path, capsys):
    assert main(["rtl", "export", "--width", "20", "--out", str(tmp_path)]) == 1
    assert "key '--width'" in capsys.readouterr().err  # the flag, not the unit's field
    assert list(tmp_path.iterdir()) == []
    assert main(["rtl", "report", "--widths", "64", "7"]) == 1
    assert "key '--widths'" in capsys.readouterr().err


def test_report_json_from_cache(capsys):
    assert main(["rtl", "report", "--widths", "64", "512", "--cached", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["width"], r["gf"]) for r in rows] == [
        (64, False),
        (512, False),
        (64, True),
        (512, True),
    ]
    assert all(r["cells"] > 0 and r["fmax_mhz"] > 0 for r in rows)
