import numpy as np
import pytest

from nmp.compress import codec_names, make_codec, measure
from nmp.compress.quantizer import quantize
from nmp.compress.vlz import vlz_decode, vlz_encode
from nmp.errors import NmpError

LOSSY = [n for n in codec_names() if make_codec(n).lossy]
LOSSLESS = [n for n in codec_names() if not make_codec(n).lossy]


def _chunks():
    rng = np.random.default_rng(1)
    gauss = (rng.standard_normal((300, 16)) * 0.05).astype(np.float32)
    repeats = np.repeat(rng.uniform(-1, 1, (7, 16)).astype(np.float32), 40, axis=0)
    # Large magnitudes against a tiny range: the float32 rounding of the reconstruction
    # can exceed the bound; those elements must come back through the outlier path.
    offset = (1.0e4 + rng.uniform(0, 1e-3, (64, 16))).astype(np.float32)
    skewed = rng.standard_cauchy((200, 8)).astype(np.float32)
    return [gauss, repeats, offset, skewed]


@pytest.mark.parametrize("name", LOSSY)
@pytest.mark.parametrize("eb_rel", [1e-4, 0.01, 0.05, 0.5])
def test_error_bound_holds_on_every_element(name, eb_rel):
    codec = make_codec(name)
    for t, x in enumerate(_chunks()):
        enc = codec.encode(x, eb_rel, table=t)
        y = codec.decode(enc)
        assert y.dtype == np.float32 and y.shape == x.shape
        eb = eb_rel * (float(x.max()) - float(x.min()))
        assert np.all(np.abs(y.astype(np.float64) - x) <= eb), (name, t)


@pytest.mark.parametrize("name", LOSSLESS)
def test_lossless_codecs_are_exact(name):
    codec = make_codec(name)
    for x in _chunks():
        assert np.array_equal(codec.decode(codec.encode(x, 0.03)), x)


def test_float32_rounding_goes_to_outliers():
    """Values a few ulps apart with a bound under an ulp: rounding the reconstruction to
    float32 would break the bound, so those elements travel verbatim."""
    ulp = np.spacing(np.float32(1000.0))
    x = (np.float32(1000.0) + ulp * np.arange(64, dtype=np.float32)).reshape(8, 8)
    q = quantize(x, 0.01)
    assert len(q.outlier_idx) > 0
    y = make_codec("quant").decode(make_codec("quant").encode(x, 0.01))
    assert np.all(np.abs(y.astype(np.float64) - x) <= q.eb_abs)


def test_codes_in_narrowest_type():
    x = np.linspace(-1, 1, 1000, dtype=np.float32).reshape(100, 10)
    assert quantize(x, 0.01).codes.dtype == np.uint8  # ~51 codes
    assert quantize(x, 1e-3).codes.dtype == np.uint16  # ~501 codes
    assert quantize(x, 1e-6).codes.dtype == np.uint32


def test_vector_lz_removes_exact_repeats():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (5, 8), dtype=np.uint8)
    codes = base[rng.integers(0, 5, 100)]
    refs, literals = vlz_encode(codes)
    assert len(literals) == len(np.unique(codes, axis=0))
    assert np.array_equal(vlz_decode(refs, literals), codes)
    # literals in first-occurrence order: the first vector is literal 0
    assert refs[0] == 0 and np.array_equal(literals[0], codes[0])


def test_ratios_order_as_expected():
    """Quantized codes compress better than float32; vector LZ wins on repeated vectors."""
    x = _chunks()[1]
    r = {n: measure(make_codec(n), [x], 0.03, repeats=1)["ratio"] for n in codec_names()}
    assert r["quant"] > 3.5 > r["none"]
    assert r["quant-vlz"] > r["quant"]
    assert r["hybrid"] >= max(r["quant-vlz"], r["quant-zstd"]) - 1e-9


def test_hybrid_choice_is_per_table_and_sticks():
    rng = np.random.default_rng(3)
    h = make_codec("hybrid")
    noisy = rng.standard_normal((512, 32)).astype(np.float32)
    rep = np.repeat(rng.standard_normal((4, 32)).astype(np.float32), 128, axis=0)
    h.encode(noisy, 0.03, table=0)
    h.encode(rep, 0.03, table=1)
    assert h.analysis[1]["repeat_fraction"] > 0.99
    assert h.analysis[0]["repeat_fraction"] < 0.01
    before = dict(h.choice)
    h.encode(rep, 0.03, table=0)  # later chunks do not re-plan
    assert h.choice == before


def test_bad_input_is_a_clear_error():
    codec = make_codec("quant")
    with pytest.raises(NmpError, match="float32"):
        codec.encode(np.zeros((2, 2)), 0.03)
    with pytest.raises(NmpError, match="error bound"):
        codec.encode(np.zeros((2, 2), np.float32), 0.0)
    with pytest.raises(NmpError, match="NaN"):
        codec.encode(np.full((2, 2), np.nan, np.float32), 0.03)
    with pytest.raises(NmpError, match="unknown codec"):
        make_codec("gzip9")


def test_codes_cover_the_extremes_without_wrapping():
    """Values at exact half-steps at the ends of the range must not wrap the unsigned codes."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 50))
        x = rng.uniform(-3, 3, n).astype(np.float32)
        x[0], x[1] = x.min(), x.max()
        eb_rel = float(rng.choice([1e-3, 0.01, 0.03, 0.05, 0.2]))
        q = quantize(x[None, :], eb_rel)
        y = make_codec("quant").decode(make_codec("quant").encode(x[None, :], eb_rel))
        assert np.all(np.abs(y.astype(np.float64) - x) <= q.eb_abs)
