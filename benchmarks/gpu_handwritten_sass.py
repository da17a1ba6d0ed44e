"""The hand-written kernel's SASS, read without a GPU: how many row loads each build keeps in
flight before it waits, the figures the GPU presets take (``kernel.handwritten_*``).

It builds ``nmp.gpu.kernels_real.KERNEL_SOURCE`` for sm_90 with NVRTC, exactly as the variants
compile it (``-std=c++17 -DPREFETCH=P`` and, for the occupancy variant, ``--maxrregcount``),
disassembles the cubin with ``nvdisasm``, and prints each build's registers and, in program
order, its row loads (``R``: a 32-bit ``LDG.E.CONSTANT``) and the adds that use them (``F``).
``R3 F3 R6 F6 R7 F7`` is a body of 16 lookups that waits for its rows 3 times.

    pip install nvidia-cuda-nvrtc==13.0.* nvidia-cuda-nvdisasm    # no GPU needed
    python benchmarks/gpu_handwritten_sass.py \\
        --nvrtc <site-packages>/nvidia/cu13/lib/libnvrtc.so.13 \\
        --nvdisasm <site-packages>/nvidia/cu13/bin/nvdisasm

Use the NVRTC version of the GPU run being modeled (the H200 run of 2026-11-30: CuPy 14.2 with
NVRTC 13.0, which reported the same registers as this script prints).
"""

from __future__ import annotations

import argparse
import ctypes
import re
import subprocess
import sys
import tempfile
from pathlib import Path

BUILDS = {
    "occupancy": ("-DPREFETCH=1", "--maxrregcount=32"),
    "prefetch": ("-DPREFETCH=4",),
    "prefetch-8": ("-DPREFETCH=8",),
}


def cubin(nvrtc: ctypes.CDLL, source: str, options: tuple[str, ...]) -> bytes:
    prog = ctypes.c_void_p()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"k.cu", 0, None, None):
        raise SystemExit("nvrtcCreateProgram failed")
    opts = [b"-arch=sm_90", b"-std=c++17", *(o.encode() for o in options)]
    rc = nvrtc.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    if rc:
        nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise SystemExit(f"NVRTC failed ({rc}): {log.value.decode(errors='replace')}")
    nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    out = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetCUBIN(prog, out)
    return out.raw


def schedule(sass: str) -> str:
    """Row loads (R) and the adds that consume them (F), in program order, run-length coded."""
    text = sass.split("\n.text.embedding_bag_sum:", 1)[1].split(".section", 1)[0]
    pending: set[str] = set()
    seq = []
    for line in text.splitlines():
        load = re.search(r"LDG\.E\.CONSTANT (R\d+),", line)
        if load:
            pending.add(load.group(1))
            seq.append("R")
            continue
        add = re.search(r"FADD (R\d+), (R\d+), (R\d+)", line)
        for reg in add.groups()[1:] if add else ():
            if reg in pending:
                pending.discard(reg)
                seq.append("F")
    return re.sub(r"R+|F+", lambda m: f"{m.group(0)[0]}{len(m.group(0))} ", "".join(seq))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nvrtc", required=True, help="path of libnvrtc.so")
    ap.add_argument("--nvdisasm", required=True, help="path of nvdisasm")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from nmp.gpu.kernels_real import KERNEL_SOURCE

    try:
        nvrtc = ctypes.CDLL(args.nvrtc)
    except OSError as exc:
        ap.error(f"--nvrtc {args.nvrtc}: cannot load NVRTC ({exc})")
    if not Path(args.nvdisasm).is_file():
        ap.error(f"--nvdisasm {args.nvdisasm}: no such file")
    major, minor = ctypes.c_int(), ctypes.c_int()
    nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    print(f"NVRTC {major.value}.{minor.value}, sm_90")
    with tempfile.TemporaryDirectory() as tmp:
        for name, options in BUILDS.items():
            path = Path(tmp) / f"{name}.cubin"
            path.write_bytes(cubin(nvrtc, KERNEL_SOURCE, options))
            sass = subprocess.run(
                [args.nvdisasm, str(path)], capture_output=True, text=True, check=True
            ).stdout
            regs = re.search(
                r"EIATTR_REGCOUNT(?:(?!EIATTR_).)*?index@\(embedding_bag_sum\).*?\.word\s+(0x[0-9a-f]+)",
                sass,
                re.S,
            )
            n_regs = int(regs.group(1), 16) if regs else -1
            print(f"{name:<11} {' '.join(options):<32} {n_regs:>3} registers")
            print(f"  {schedule(sass)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
