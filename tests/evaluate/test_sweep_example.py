"""The sweep file shown in nmp.evaluate.sweep's docstring is a valid sweep."""

from __future__ import annotations

import tomllib

import nmp.evaluate.sweep as sweep_module
from nmp.evaluate.sweep import parse_sweep
from nmp.evaluate.sweepcheck import validate_sweep


def test_the_documented_example_validates_against_the_presets():
    doc = sweep_module.__doc__ or ""
    block = doc.split("::\n\n", 1)[1].split("\n\nAn axis", 1)[0]
    text = "\n".join(line[4:] for line in block.splitlines())
    spec = parse_sweep(tomllib.loads(text), file="example.toml")
    points = validate_sweep(spec, file="example.toml")
    assert len(points) == 15  # 3 archs x 3 batches + 1 design x 3 batches x 2 replica counts
