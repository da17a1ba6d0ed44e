"""The C DRAM engine's library loaded: its symbols through ctypes, the file checked whole first,
and a library that does not load removed and built again by :mod:`nmp.memory.native_build`.

Loading is apart from building: ``setup.py`` loads native_build.py on its own at install, where
nothing is loaded, and ctypes is needed only here.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

from nmp.memory import native_build  # by attribute: a test's patch of it is seen here


def load(symbol: str, on_build=None) -> Any:
    """``symbol`` of the library :func:`nmp.memory.native_build.build` gives, loaded; a
    library that does not load or lacks it (a corrupt or truncated file) is removed where it
    is this user's cache, and the library built again, once."""
    return load_all((symbol,), on_build)[0]


def load_all(symbols: tuple[str, ...], on_build=None) -> tuple[Any, ...]:
    """:func:`load` of several symbols, the library found (its key hashed) and checked once."""
    lib = native_build.build(on_build=on_build)
    try:
        return _symbols(lib, symbols)
    except OSError:
        in_package = lib.parent == native_build._SOURCE.parent
        if not in_package:
            lib.unlink(missing_ok=True)
        return _symbols(native_build.build(on_build=on_build, prebuilt=not in_package), symbols)


def _symbols(lib: Path, symbols: tuple[str, ...]) -> tuple[Any, ...]:
    """``symbols`` of ``lib``, checked whole first (the loader maps a truncated library and
    then dies of SIGBUS reading past its end: a crash, not an error)."""
    if not elf_intact(lib):
        raise OSError(f"{lib}: not a whole shared library (truncated or corrupt)")
    handle = ctypes.CDLL(str(lib))
    found = []
    for symbol in symbols:
        try:
            found.append(getattr(handle, symbol))
        except AttributeError:
            raise OSError(f"{lib}: no symbol {symbol}") from None
    return tuple(found)


def elf_intact(lib: Path) -> bool:
    """Whether ``lib`` is an ELF file whose program headers, loaded segments and section
    headers all lie within it. True for a file that is not ELF where ELF is not the platform's
    format (the loader judges it there)."""
    import struct

    try:
        data = lib.read_bytes()
    except OSError:
        return False
    if data[:4] != b"\x7fELF":
        import platform

        return platform.system() != "Linux"
    if len(data) < 64 or data[4] not in (1, 2) or data[5] not in (1, 2):
        return False
    end = "<" if data[5] == 1 else ">"
    if data[4] == 2:  # 64-bit
        phoff, shoff = struct.unpack_from(end + "QQ", data, 32)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", data, 54)
        phdr, ptype_off = end + "IIQQQQQQ", (0, 2, 5)  # type, offset, filesz positions
    else:
        phoff, shoff = struct.unpack_from(end + "II", data, 28)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", data, 42)
        phdr, ptype_off = end + "IIIIIIII", (0, 1, 4)
    size = len(data)
    if phoff + phnum * phentsize > size or shoff + shnum * shentsize > size:
        return False
    if phentsize < struct.calcsize(phdr) and phnum:
        return False
    for i in range(phnum):
        fields = struct.unpack_from(phdr, data, phoff + i * phentsize)
        ptype, offset, filesz = (fields[j] for j in ptype_off)
        if ptype == 1 and offset + filesz > size:  # PT_LOAD
            return False
    return True
