"""The code a CPU without AVX-512 runs, on a machine that has it: ``--isa avx2``.

Issue 43's targets are read on an AMD EPYC without GFNI, that is Zen 3 or older, which has no
AVX-512. There nmp runs other code than on an AVX-512 Intel: the C DRAM engine compiles its
AVX2 paths (``-march=native`` on such a CPU), numba compiles its kernels for AVX2 and torch
dispatches to its AVX2 kernels. ``--isa avx2`` makes a benchmark run that code here: the engine
built with ``-mno-avx512f`` (``$CC``: the library's key covers the compiler command, so it is
built once into the user cache beside the native one), numba for the ``x86-64-v3`` level and
torch's AVX2 kernels. The cores, caches and memory stay this machine's: a proxy for the code,
not for an AMD core's timing.
"""

from __future__ import annotations

import os
import sys

# A CPU without AVX-512 (AMD EPYC up to Zen 3, where issue 43 measured 0.83-0.86x): numba
# compiles for the x86-64-v3 level (AVX2, FMA) and torch dispatches to its AVX2 kernels (ATen
# and FBGEMM), so that a machine with AVX-512 measures the ratio such a CPU's code gets (its
# caches and memory stay this machine's). The gather kernels use no GFNI and no AVX-512
# intrinsics (cache-line vectors, nmp.arch.vector_ops: one 512-bit op each where the CPU has
# AVX-512, two 256-bit ops with AVX2); only the compiler's choices differ.
AVX2_ONLY_ENV = {
    "NUMBA_CPU_NAME": "x86-64-v3",
    # no features beyond the level's: numba otherwise adds the host's (AVX-512 among them)
    "NUMBA_CPU_FEATURES": "",
    "ATEN_CPU_CAPABILITY": "avx2",
    "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2",
}
ISAS = ("native", "avx2")
_MARK = "NMP_BENCH_ISA"  # set in the re-executed process: the environment is in place


def avx2_engine_cc() -> str:
    """``$CC`` for the engine's AVX2 paths: the compiler nmp would use, without AVX-512."""
    from nmp.memory.native_build import compiler

    return " ".join(compiler()) + " -mno-avx512f"


def enter(isa: str) -> None:
    """Run this script under ``isa``: for ``avx2``, re-execute it once with the environment
    set before anything is imported or compiled (numba reads its CPU at import; the engine's
    library is chosen at its first use). Children inherit it."""
    if isa == "native" or os.environ.get(_MARK) == isa:
        return
    env = {**os.environ, **AVX2_ONLY_ENV, "CC": avx2_engine_cc(), _MARK: isa}
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def describe() -> str:
    """One line: the code this process runs, and the engine library it loads."""
    from nmp.memory.native_build import build

    isa = os.environ.get(_MARK, "native")
    what = (
        "this CPU's (-march=native)"
        if isa == "native"
        else f"AVX2 only (CC={os.environ['CC']!r}, "
        + " ".join(f"{k}={v}" for k, v in AVX2_ONLY_ENV.items())
        + "): the code a CPU without AVX-512 runs, on this machine's cores"
    )
    return f"code: {what}; engine library {build()}"
