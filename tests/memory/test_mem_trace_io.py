"""Trace I/O: both formats, plain and gzip, round trip; malformed lines name file and line."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from nmp.errors import TraceError
from nmp.memory import make_requests, read_trace, write_trace


@pytest.mark.parametrize("fmt", ["ramulator", "dramsim3"])
@pytest.mark.parametrize("name", ["t.trace", "t.trace.gz"])
def test_round_trip(tmp_path, fmt, name):
    rng = np.random.default_rng(3)
    reqs = make_requests(rng.integers(0, 2**33, 1000) * 64, write=rng.random(1000) < 0.4)
    path = tmp_path / name
    write_trace(reqs, path, fmt=fmt)
    back = read_trace(path)
    np.testing.assert_array_equal(back["addr"], reqs["addr"])
    np.testing.assert_array_equal(back["write"], reqs["write"])
    raw = path.read_bytes()
    assert (raw[:2] == b"\x1f\x8b") == name.endswith(".gz")
    # the vectorized path (canonical lines) and the per-line path (here: a comment) agree
    plain = tmp_path / "commented.trace"
    text = gzip.decompress(raw) if name.endswith(".gz") else raw
    plain.write_bytes(b"# header\n" + text)
    slow = read_trace(plain)
    np.testing.assert_array_equal(slow["addr"], reqs["addr"])
    np.testing.assert_array_equal(slow["write"], reqs["write"])


def test_formats_read(tmp_path):
    p = tmp_path / "a.trace"
    p.write_text("# comment\nLD 0x40\n\nST 0x80\nLD 192\n")
    r = read_trace(p)
    assert list(r["addr"]) == [64, 128, 192] and list(r["write"]) == [False, True, False]
    q = tmp_path / "b.trace"
    q.write_text("0x40 READ 0\n0x80 WRITE 5\n")
    r = read_trace(q)
    assert list(r["addr"]) == [64, 128] and list(r["write"]) == [False, True]


@pytest.mark.parametrize(
    ("text", "line"),
    [("LD 0x40\nLD 0x80\nLX 0x10\n", 3), ("LD 0x40\nST\n", 2), ("0x40 READ 1\n0x80 FETCH 2\n", 2),
     ("LD 0x40\nLD 0xZZ\n", 2)],
)  # fmt: skip
def test_malformed_line_names_line(tmp_path, text, line):
    p = tmp_path / "bad.trace"
    p.write_text(text)
    with pytest.raises(TraceError) as err:
        read_trace(p)
    assert f"bad.trace:{line}:" in str(err.value)


def test_missing_and_empty(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        read_trace(tmp_path / "nope.trace")
    (tmp_path / "e.trace").write_text("\n")
    with pytest.raises(TraceError, match="empty"):
        read_trace(tmp_path / "e.trace")


def test_dramsim3_cycles_out_of_order_are_an_error(tmp_path) -> None:
    """Issue 25: a DRAMsim3 trace whose cycles go backwards was accepted silently (the fast
    path did not read them). Both parse paths now name the line."""
    canonical = tmp_path / "a.trace"
    canonical.write_text("0x40 READ 10\n0x80 READ 20\n0xc0 WRITE 15\n")
    with pytest.raises(TraceError, match=r"a\.trace:3: DRAMsim3 cycle 15 is below"):
        read_trace(canonical)
    loose = tmp_path / "b.trace"  # short op names and a comment: the line-by-line path
    loose.write_text("0x40 R 10\n# note\n0x80 W 9\n")
    with pytest.raises(TraceError, match=r"b\.trace:3:"):
        read_trace(loose)
    equal = tmp_path / "c.trace"
    equal.write_text("0x40 READ 10\n0x80 READ 10\n")
    assert len(read_trace(equal)) == 2


CANONICAL_EDGES = [
    b"LD 0x40\nST 0x80\n",
    b"LD 0x40\nST 0X8aBc",  # no last newline; 'X', mixed case
    b"ST 0xffffffffffffffff\nLD 0x0\n",  # 16 digits, the largest address
    b"LD 0x1ffffffffffffffff\n",  # 17 digits: not canonical
    b"LD 0x40\n\nST 0x80\n",  # a blank line
    b"LD 0x40\r\nST 0x80\r\n",  # CRLF
    b"LD 0x\n",  # no digits
    b"LD 0x4g\n",  # not a hex digit
    b"LX 0x40\n",
    b"LD  0x40\n",
    b"# c\nLD 0x40\n",
    b"0x40 READ 0\n",
    b"",
    b"\n",
    b"LD 0x40\xff\n",
]


@pytest.mark.parametrize("text", CANONICAL_EDGES)
def test_the_c_trace_reader_agrees_with_numpy(text) -> None:
    """The C reader (engine_trace.h) takes exactly the texts the numpy fast path takes, with
    the same requests; anything else falls back to the general reader."""
    from nmp.memory import native
    from nmp.memory.trace import REQUEST_DTYPE, _parse_canonical_ramulator

    if not native.available():
        pytest.skip(f"the C engine is not built here: {native.unavailable_reason()}")
    got = native.parse_trace(text, REQUEST_DTYPE)
    want = _parse_canonical_ramulator(text)
    assert (got is None) == (want is None)
    if want is not None:
        assert got is not None and got.dtype == REQUEST_DTYPE
        np.testing.assert_array_equal(got, want)


def test_the_c_trace_reader_on_random_canonical_traces() -> None:
    from nmp.memory import native
    from nmp.memory.trace import REQUEST_DTYPE, _parse_canonical_ramulator

    if not native.available():
        pytest.skip(f"the C engine is not built here: {native.unavailable_reason()}")
    rng = np.random.default_rng(5)
    addr = rng.integers(0, 2**63, 5000, dtype=np.uint64) >> rng.integers(0, 63, 5000).astype(
        np.uint64
    )
    write = rng.random(5000) < 0.3
    text = "\n".join(
        f"{'ST' if w else 'LD'} {'0x' if i % 3 else '0X'}{a:x}"
        for i, (a, w) in enumerate(zip(addr.tolist(), write.tolist(), strict=True))
    ).encode()
    got = native.parse_trace(text, REQUEST_DTYPE)
    assert got is not None
    np.testing.assert_array_equal(got["addr"], addr)
    np.testing.assert_array_equal(got["write"], write)
    np.testing.assert_array_equal(got, _parse_canonical_ramulator(text))


def test_dramsim3_arrival_cycles_are_honoured(tmp_path):
    """Issue 42: a DRAMsim3 trace's arrival cycles were read, checked and dropped (the replay
    said `cycles: 1`); now no request is offered before its cycle, and a written trace keeps
    them."""
    from nmp.memory import load_memory, replay

    spaced = tmp_path / "spaced.trace"
    spaced.write_text("".join(f"{i * 64:#x} READ {i * 1000}\n" for i in range(100)))
    at_once = tmp_path / "at_once.trace"
    at_once.write_text("".join(f"{i * 64:#x} READ 1\n" for i in range(100)))
    reqs = read_trace(spaced)
    assert reqs["arrival"].tolist() == [i * 1000 for i in range(100)]
    spec = load_memory("ddr4-3200aa")
    assert replay(reqs, spec).cycles >= 99_000  # the last request arrives at cycle 99,000
    assert replay(read_trace(at_once), spec).cycles < 2_000
    write_trace(reqs, tmp_path / "again.trace", fmt="dramsim3")
    assert (read_trace(tmp_path / "again.trace") == reqs).all()
    huge = tmp_path / "huge.trace"
    huge.write_text("0x40 READ 1\n0x80 READ 9223372036854775807\n")
    with pytest.raises(TraceError, match="2\\^62"):
        read_trace(huge)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("0x40 READ 0\n# c\n\n0x80 READ 99999999999999999999999\n", 4, "2\\^62"),
        ("0x40 READ 0\n0x80 READ 5000000000000000000\n", 2, "2\\^62"),
        ("LD 0x40\nLD 0x1ffffffffffffffff\n", 2, "64 bits"),
        ("0x40 READ 0\n\n0x1ffffffffffffffff READ 5\n", 3, "64 bits"),
        # past 4,300 digits int() refuses a decimal text (ValueError: an internal error)
        ("LD 0x40\nLD " + "9" * 5000 + "\n", 2, "64 bits"),
        ("0x40 READ 1\n0x80 READ " + "9" * 5000 + "\n", 2, "2\\^62"),
        ("0x40 READ 9\n0x80  READ " + "0" * 5000 + "7\n", 2, "below"),
        # 24 digits with leading zeros: 5, not the 0 that 20 characters of it read as
        ("0x40 READ 0\n0x80 READ 000000000000000000000005\n0xc0 READ 3\n", 3, "below"),
    ],
)
def test_a_number_too_large_names_its_line(tmp_path, text, line, message) -> None:
    """A cycle or an address beyond 64 bits named the file only; a cycle of more than 20
    characters was cut to 20 (a zero-padded 5 read as 0, and its trace's disorder passed)."""
    path = tmp_path / "big.trace"
    path.write_text(text)
    with pytest.raises(TraceError, match=message) as err:
        read_trace(path)
    assert err.value.line == line


def test_zero_padded_cycles_read_exactly(tmp_path) -> None:
    path = tmp_path / "padded.trace"
    path.write_text("0x40 READ 0000000000000000000000007\n0x80 READ 8\n")
    assert read_trace(path)["arrival"].tolist() == [7, 8]


def _damaged_gzip(tmp_path, how: str):
    raw = bytearray(gzip.compress(b"LD 0x40\nST 0x80\n" * 64, mtime=0))
    if how == "deflate":  # a deflate block's bits: zlib.error, not OSError nor EOFError
        raw[10] ^= 0x55  # "invalid block type"
    elif how == "crc":
        raw[-8] ^= 0x55
    elif how == "truncated":
        raw = raw[: len(raw) // 2]
    path = tmp_path / f"{how}.trace.gz"
    path.write_bytes(bytes(raw))
    return path


@pytest.mark.parametrize("how", ["deflate", "crc", "truncated"])
def test_a_damaged_gzip_trace_is_named(tmp_path, how) -> None:
    """A corrupt deflate block raised zlib.error, which no reader caught: `nmp replay` ended
    in "internal error: error: Error -3 while decompressing data"."""
    path = _damaged_gzip(tmp_path, how)
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert str(err.value).startswith(f"{path}: ")


def test_replay_of_a_damaged_gzip_trace_is_one_line(tmp_path, capsys) -> None:
    from nmp.cli import main

    path = _damaged_gzip(tmp_path, "deflate")
    assert main(["replay", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"nmp: error: {path}: ") and "internal error" not in err


@pytest.mark.parametrize(
    "text",
    [
        "LD 0x00000000000000000040\nST 0x80\n",  # canonical form, the fast path
        "LD 0x00000000000000000040\nST   0x80\n",  # the per-line path
        "0x00000000000000000040 READ 1\n0x80 WRITE 2\n",
        "0x00000000000000000040 READ 1\n0x80  WRITE 2\n",
    ],
)
def test_zero_padded_addresses_read_exactly(tmp_path, text) -> None:
    """A hex address of more than 16 digits whose value fits 64 bits (zero-padded) was refused
    as "does not fit 64 bits", as cycles were before they were read exactly."""
    path = tmp_path / "padded.trace"
    path.write_text(text)
    assert read_trace(path)["addr"].tolist() == [0x40, 0x80]


@pytest.mark.parametrize(
    "text", ["LD 0064\n", "LD 64\nST 0064\n", "0064 READ 1\n", "LD 0" + "9" * 5000 + "\n"]
)
def test_a_decimal_address_with_leading_zeros_names_its_line(tmp_path, text) -> None:
    """int(text, 0) refuses '0064' with a ValueError, which escaped `nmp replay` as an
    internal error; a leading zero is ambiguous (octal to C's strtoull, hex to DRAMsim3)."""
    path = tmp_path / "zeros.trace"
    path.write_text(text)
    with pytest.raises(TraceError, match="leading zero") as err:
        read_trace(path)
    assert err.value.line == text.count("\n")


def _zeros_gzip(path, megabytes: int) -> None:
    """``megabytes`` MiB of zeros, gzip-compressed (about 1000:1) without holding them."""
    import zlib

    comp = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip member
    chunk = bytes(1 << 20)
    with open(path, "wb") as fh:
        for _ in range(megabytes):
            fh.write(comp.compress(chunk))
        fh.write(comp.flush())


def test_a_gzip_stream_of_zeros_is_refused_before_it_is_unpacked(tmp_path, monkeypatch) -> None:
    """The usual gzip bomb: 256 MiB of zeros in 256 KB. Its first text bytes hold a NUL, so it is
    refused after one read of the probe's size, under no memory bound, not unpacked up to one;
    a trace that starts as text and holds a NUL later is refused by its line, as before."""
    from nmp.memory import trace_file

    bomb = tmp_path / "bomb.trace.gz"
    _zeros_gzip(bomb, 256)
    assert bomb.stat().st_size < 1 << 20
    asked: list[int] = []
    read = gzip.GzipFile.read

    def spy(self, size=-1):
        asked.append(size)
        return read(self, size)

    monkeypatch.setattr(gzip.GzipFile, "read", spy)
    with pytest.raises(TraceError, match="NUL byte at byte 0") as err:
        trace_file.read_trace_bytes(bomb)
    assert "bomb.trace.gz" in str(err.value)
    assert asked == [trace_file.PROBE_BYTES]  # (the whole text would be a read of -1)

    late = tmp_path / "late.trace.gz"
    late.write_bytes(gzip.compress(b"LD 0x40\n" * 20_000 + b"\0\n", mtime=0))
    with pytest.raises(TraceError, match=r"late\.trace\.gz:20001: malformed"):
        read_trace(late)
