"""Workload specs: presets load with their published figures; bad specs name file and key."""

from __future__ import annotations

import pytest

from nmp.config import preset_names
from nmp.errors import SpecError
from nmp.workload import REUSE_LEVELS, catalog_rows, load_workload

PRESETS = [
    "criteo-kaggle",
    "criteo-terabyte",
    "mlperf-dlrm",
    "dlrm-benchmark",
    "recross-eval",
    "gpu-micro24",
]
KAGGLE_ROWS = [
    1460,
    583,
    10131227,
    2202608,
    305,
    24,
    12517,
    633,
    3,
    93145,
    5683,
    8351593,
    3194,
    27,
    14992,
    5461306,
    10,
    5652,
    2173,
    4,
    7046547,
    18,
    15,
    286181,
    105,
    142572,
]


def test_all_presets_exist_and_load():
    assert set(PRESETS) <= set(preset_names("workload"))
    for name in PRESETS:
        spec = load_workload(name)
        assert spec.name == name
        assert spec.tables and spec.batch >= 1


def test_preset_figures_match_the_papers():
    bench = load_workload("dlrm-benchmark")
    assert [(t.rows, t.dim) for t in bench.tables] == [(1_000_000, 64)] * 8
    assert (bench.pooling, bench.batch) == (100, 2048)
    gpu = load_workload("gpu-micro24")
    assert [(t.rows, t.dim, t.dtype) for t in gpu.tables] == [(500_000, 128, "float32")] * 12
    assert (gpu.pooling, gpu.batch, gpu.distribution) == (150, 2048, "reuse")
    recross = load_workload("recross-eval")
    assert [t.rows for t in recross.tables] == KAGGLE_ROWS
    assert {t.dim for t in recross.tables} == {64}
    assert (recross.pooling, recross.batch) == (80, 32)
    kaggle = load_workload("criteo-kaggle")
    assert [t.rows for t in kaggle.tables] == KAGGLE_ROWS and kaggle.tables[0].dim == 16
    assert kaggle.pooling == 1
    assert max(t.rows for t in load_workload("criteo-terabyte").tables) <= 10_000_000
    mlperf = load_workload("mlperf-dlrm")
    assert max(t.rows for t in mlperf.tables) <= 40_000_000 and mlperf.tables[0].dim == 128


def test_catalog_rows_give_key_figures():
    rows = {r["name"]: r for r in catalog_rows()}
    bench = rows["dlrm-benchmark"]
    assert bench["tables"] == 8 and bench["rows_total"] == 8_000_000
    # 8 x 1M rows x 64 x 4 B
    assert bench["size_mib"] == pytest.approx(8e6 * 256 / 2**20, abs=0.1)
    assert "summary" in bench and bench["distribution"] == "uniform"


def test_overrides_dim_batch_reuse():
    spec = load_workload("recross-eval", {"dim": 4, "batch": 1})
    assert {t.dim for t in spec.tables} == {4} and spec.batch == 1
    gpu = load_workload("gpu-micro24", {"reuse": "high"})
    assert gpu.hot_set(0) == REUSE_LEVELS["high"]
    # Setting a reuse level switches a uniform workload to the reuse distribution.
    bench = load_workload("dlrm-benchmark", {"reuse": "low"})
    assert bench.distribution == "reuse" and bench.hot_set(3) == REUSE_LEVELS["low"]
    # Leaving the reuse distribution drops the level.
    uni = load_workload("gpu-micro24", {"distribution": "uniform"})
    assert uni.reuse == "" and uni.distribution == "uniform"
    # Explicit hot-set figures beat the level's; the hot set is capped at the table.
    custom = load_workload("gpu-micro24", {"hot_rows": 1000, "hot_fraction": 0.25})
    assert custom.hot_set(0) == (1000, 0.25)
    tiny = load_workload("gpu-micro24", {"rows": 100, "reuse": "low"})
    assert tiny.hot_set(0)[0] == 100
    # rows before num_tables: the intermediate state may be inconsistent, the result is not.
    spec = load_workload("criteo-kaggle", {"rows": 1000, "num_tables": 3})
    assert [t.rows for t in spec.tables] == [1000] * 3


def test_explicit_tables_and_per_table_overrides(tmp_path):
    path = tmp_path / "two.toml"
    path.write_text(
        'name = "two"\nbatch = 4\npooling = 3\n'
        "[[tables]]\nrows = 100\ndim = 8\n"
        '[[tables]]\nrows = 50\ndim = 16\ndtype = "float16"\npooling = {dist = "uniform", '
        "low = 0, high = 5}\n"
    )
    spec = load_workload(str(path))
    assert [(t.rows, t.dim, t.dtype) for t in spec.tables] == [
        (100, 8, "float32"),
        (50, 16, "float16"),
    ]
    assert spec.tables[1].row_bytes == 32
    assert spec.table_pooling(0).mean_lookups == 3 and spec.table_pooling(1).mean_lookups == 2.5
    assert load_workload(str(path), {"tables.1.dim": 4}).tables[1].dim == 4
    assert {t.dim for t in load_workload(str(path), {"dim": 32}).tables} == {32}
    assert {t.dtype for t in load_workload(str(path), {"dtype": "int8"}).tables} == {"int8"}


@pytest.mark.parametrize(
    ("text", "key", "needle"),
    [
        ("rows = [10, 0]\ndim = 4", "rows[1]", ">= 1"),
        ("rows = 10\ndim = 4", "num_tables", ">= 1"),
        ("rows = 10\nnum_tables = 2", "dim", ">= 1"),
        ("[[tables]]\nrows = 10\ndim = 0", "tables[0].dim", ">= 1"),
        (
            '[[tables]]\nrows = 10\ndim = 4\ndtype = "float64"',
            "tables[0].dtype",
            "unknown table dtype 'float64' (known: float32",
        ),
        ("rows = 10\nnum_tables = 2\ndim = 4\nbatch = 0", "batch", ">= 1"),
        (
            'rows = 10\nnum_tables = 2\ndim = 4\ndistribution = "zipf"\nreuse = "high"',
            "reuse",
            "only with",
        ),
        ('rows = 10\nnum_tables = 2\ndim = 4\ndistribution = "reuse"', "reuse", "needs a level"),
        ('rows = 10\nnum_tables = 2\ndim = 4\ndistribution = "zipf"\nalpha = -1', "alpha", "> 0"),
        (
            'rows = 10\nnum_tables = 2\ndim = 4\ndistribution = "lognormal"',
            "distribution",
            "unknown access distribution 'lognormal' (known: uniform, zipf",
        ),
        ("rows = 10\nnum_tables = 2\ndim = 4\nbogus = 1", "bogus", "unknown key"),
        ("rows = 10\nnum_tables = 2\ndim = 4\n[[tables]]\nrows = 1\ndim = 1", "tables", "not both"),
        ("dim = 4", "tables", "no tables"),
    ],
)
def test_bad_specs_name_file_and_key(tmp_path, text, key, needle):
    path = tmp_path / "bad.toml"
    path.write_text(f'name = "bad"\n{text}\n')
    with pytest.raises(SpecError) as info:
        load_workload(str(path))
    assert info.value.file == str(path)
    assert info.value.key == key
    assert needle in info.value.message


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"batch": 0}, "workload.batch"),
        ({"reuse": "huge"}, "workload.reuse"),
        ({"tables.0.dim": 8}, "workload.tables.0.dim"),
        ({"nope": 1}, "workload.nope"),
        ({"hot_fraction": 1.5}, "workload.hot_fraction"),
        ({"rows": 10}, "workload.num_tables"),
    ],
)
def test_bad_overrides_name_the_key(overrides, key):
    name = "criteo-kaggle" if "rows" in overrides else "gpu-micro24"
    with pytest.raises(SpecError) as info:
        load_workload(name, overrides)
    assert info.value.key == key


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(SpecError, match="dlrm-benchmark"):
        load_workload("no-such-workload")


def test_switching_distribution_drops_parameters_that_no_longer_apply():
    assert load_workload("recross-eval", {"distribution": "uniform"}).alpha is None
    pareto = load_workload("recross-eval", {"distribution": "pareto"})
    assert pareto.alpha is None and pareto.effective_alpha == 0.25
    assert load_workload("recross-eval", {"distribution": "pareto", "alpha": 0.5}).alpha == 0.5
    zipf = load_workload("gpu-micro24", {"alpha": 1.2})
    assert (zipf.distribution, zipf.alpha, zipf.reuse) == ("zipf", 1.2, "")
    assert load_workload("dlrm-benchmark", {"alpha": 0.9}).distribution == "zipf"


def test_alpha_with_a_distribution_that_ignores_it_is_an_error(tmp_path):
    path = tmp_path / "w.toml"
    path.write_text('name = "w"\nrows = 10\nnum_tables = 1\ndim = 4\nalpha = 1.1\n')
    with pytest.raises(SpecError) as info:
        load_workload(str(path))
    assert info.value.key == "alpha" and "only with" in info.value.message


def test_loaded_spec_follows_its_file(tmp_path):
    """Loads are reused only while the file keeps its mtime and size."""
    import os

    path = tmp_path / "w.toml"
    path.write_text('name = "w"\nrows = [100]\ndim = 8\nbatch = 4\npooling = 2\n')
    first = load_workload(str(path))
    assert load_workload(str(path)) is first
    assert load_workload(str(path), {"batch": 2}).batch == 2
    path.write_text('name = "w"\nrows = [100]\ndim = 8\nbatch = 16\npooling = 2\n')
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert load_workload(str(path)).batch == 16
