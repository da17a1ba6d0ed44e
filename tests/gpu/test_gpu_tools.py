"""The GPU microbenchmark tools that need no test GPU: the hand-written kernel's SASS reader
and the per-call floor's refusal without CUDA."""

from __future__ import annotations

import pytest

from .scripts import load_script

# A body in nvdisasm's form: three rows leave, two are added, one more leaves, two added.
SASS = """
.text.embedding_bag_sum:
        /*0010*/                   LDG.E.64.CONSTANT R4, desc[UR16][R2.64] ;
        /*0020*/                   LDG.E.CONSTANT R8, desc[UR16][R4.64] ;
        /*0030*/                   LDG.E.CONSTANT R9, desc[UR16][R6.64] ;
        /*0040*/                   LDG.E.CONSTANT R10, desc[UR16][R12.64] ;
        /*0050*/                   FADD R20, R8, R20 ;
        /*0060*/                   FADD R20, R20, R9 ;
        /*0070*/                   LDG.E.CONSTANT R11, desc[UR16][R14.64] ;
        /*0080*/                   FADD R20, R20, R10 ;
        /*0090*/                   FADD R20, R20, R11 ;
        /*00a0*/                   FADD R21, R20, R20 ;
        .section .nv.shared
"""


def test_the_sass_reader_counts_rows_and_the_adds_that_wait_for_them():
    tool = load_script("gpu_handwritten_sass")
    # 8-B index loads are not rows; an add of no pending row is not a wait.
    assert tool.schedule(SASS).split() == ["R3", "F2", "R1", "F2"]


def test_the_launch_floor_needs_a_gpu(capsys):
    import torch

    tool = load_script("gpu_launch_floor")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the script would measure it")
    assert tool.main(["--calls", "1"]) == 2
    assert "needs a GPU" in capsys.readouterr().err


def test_the_tools_refuse_bad_arguments_in_one_line(tmp_path, capsys):
    sass_tool = load_script("gpu_handwritten_sass")
    with pytest.raises(SystemExit) as exc:
        sass_tool.main(["--nvrtc", str(tmp_path / "no.so"), "--nvdisasm", "x"])
    assert exc.value.code == 2 and "cannot load NVRTC" in capsys.readouterr().err
    floor = load_script("gpu_launch_floor")
    for bad, message in ((["--calls", "1,x"], "comma-separated integers"),
                         (["--calls", "0"], "must be >= 1")):  # fmt: skip
        with pytest.raises(SystemExit) as exc:
            floor.main(bad)
        assert exc.value.code == 2 and message in capsys.readouterr().err
