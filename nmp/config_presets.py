"""Presets as files: the folders under :func:`project_root`, one registry per kind, and the
lookup of a preset by name.

Where presets live and how a name becomes a file is apart from what the file holds
(:mod:`nmp.config_toml`, :mod:`nmp.config_mapping`). Split from :mod:`nmp.config`, which
re-exports the public names: code imports them from there; the registries are created here,
once.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nmp.errors import NmpError, SpecError
from nmp.registry import Registry


def project_root() -> Path:
    """The folder that holds ``models/`` and ``workloads/``.

    ``NMP_HOME`` overrides it; otherwise the checkout that this package lives in.
    """
    env = os.environ.get("NMP_HOME")
    if env:
        root = Path(env)
        if not (root / "models").is_dir():
            raise SpecError(
                f"NMP_HOME={env}: no models/ folder there (it names the folder that holds "
                "models/ and workloads/; unset it to use the kit's own)"
            )
        from nmp.fileio import others_can_write  # (on use: most commands never set it)

        for folder in (root, root / "models", root / "workloads"):
            why = others_can_write(folder)
            if why:
                raise SpecError(
                    f"NMP_HOME={env}: presets are not read from {folder}: {why} (chmod o-w it)"
                )
        return root
    return _package_root()


@functools.cache
def _package_root() -> Path:
    """The checkout this package lives in (resolved once: 35 us a call, most of a preset
    lookup's time)."""
    return Path(__file__).resolve().parent.parent


class PresetRegistry(Registry[Path]):
    """The presets of one kind: the TOML files of a folder under :func:`project_root`.

    A preset is its file: adding ``models/memory/<name>.toml`` adds the memory preset
    ``<name>``, nothing else to edit. Every lookup sees the folder as it is (``NMP_HOME`` may
    change it, a file may be added): the listing is kept only while the folder's identity and
    modification time stay those it was read at (a file added, removed or renamed changes the
    time), and not kept at all while that time is within :data:`_RACY_NS` of now (a file
    system with coarse times could show a change in the same tick). Listing the folder took
    about 95 us; the full ReCross claims listed ``models/arch`` 91,000 times (setup keys that
    name a design, checked per point). The registry is listed by ``nmp models --registries``
    with the other families.
    """

    #: The preset registries by their kind ("memory", "workload", ...).
    by_kind: dict[str, PresetRegistry] = {}

    def __init__(self, kind: str, folder: str) -> None:
        super().__init__(f"{kind} preset")
        self.preset_kind = kind
        self.folder = folder  # relative to the project root
        self._kept: tuple[tuple, dict[str, Path]] | None = None  # (the folder's stat, listing)
        PresetRegistry.by_kind[kind] = self

    def path(self) -> Path:
        return project_root() / self.folder

    def _listed(self) -> dict[str, Path]:
        import stat
        import time

        folder = self.path()
        try:
            st = folder.stat()
        except OSError:
            return {}
        if not stat.S_ISDIR(st.st_mode):
            return {}
        seen = (str(folder), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        kept = self._kept
        if kept is not None and kept[0] == seen:
            return dict(kept[1])
        listed = {p.stem: p for p in sorted(folder.glob("*.toml"))}
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > _RACY_NS:
            self._kept = (seen, listed)
        return dict(listed)

    def get(self, name: str) -> Path:
        found = self._listed().get(name)
        if found is None:
            raise NmpError(self.unknown_message(name))
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._listed()

    def describe(self) -> list[dict[str, str]]:
        """One row per preset: name, the file's first comment line, and the file."""
        root = project_root()
        return [
            {"name": k, "description": _first_comment(p), "module": str(p.relative_to(root))}
            for k, p in self.items()
        ]


# A folder changed less than this long ago is listed again at every lookup (see PresetRegistry).
_RACY_NS = 2_000_000_000


# The most of a preset's start read for its description (its first comment line is at the top)
_DESCRIPTION_BYTES = 64 * 1024


def _first_comment(path: Path) -> str:
    """The first comment line of ``path``, or what is wrong with the file (a pipe, a device: read
    without blocking, and only its first :data:`_DESCRIPTION_BYTES`)."""
    from nmp.fileio import open_regular

    try:
        with open_regular(path) as fh:
            text = fh.read(_DESCRIPTION_BYTES).decode("utf-8", errors="replace")
    except NmpError as exc:
        return f"invalid: {exc.message}"
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
        if line.strip():
            break
    return ""


MEMORY_PRESETS = PresetRegistry("memory", "models/memory")
DRAM_STANDARDS = PresetRegistry("DRAM standard", "models/memory/standards")
ARCH_PRESETS = PresetRegistry("arch", "models/arch")
GPU_PRESETS = PresetRegistry("gpu", "models/gpu")
TOPOLOGY_PRESETS = PresetRegistry("topology", "models/topology")
NETWORK_PRESETS = PresetRegistry("network", "models/network")
WORKLOAD_PRESETS = PresetRegistry("workload", "workloads")

#: ``nmp models``: a preset kind's table of key figures (name, summary, figures); the model
#: package that reads the kind registers its ``catalog_rows`` under the kind's name.
PRESET_CATALOGS: Registry[Callable[[], list[dict[str, Any]]]] = Registry(
    "preset catalog",
    package="nmp",
    marker=r"^@PRESET_CATALOGS\.register\(",
    order=lambda rows_fn: rows_fn.__module__,  # listed in module order, whatever loaded first
)


def preset_registry(kind: str) -> PresetRegistry:
    """The presets of ``kind``; an NmpError listing the kinds when there is none."""
    try:
        return PresetRegistry.by_kind[kind]
    except KeyError:
        known = ", ".join(PresetRegistry.by_kind)
        raise NmpError(f"unknown preset kind {kind!r} (known: {known})") from None


def preset_dir(kind: str) -> Path:
    """The folder of ``kind``'s presets (``models/<kind>``; ``workloads`` for workloads)."""
    return preset_registry(kind).path()


def preset_names(kind: str) -> list[str]:
    return list(preset_registry(kind).names())


def find_preset(kind: str, name: str) -> Path:
    """Path of preset ``name`` of ``kind``, or of ``name`` itself if it is a TOML file."""
    candidate = Path(name)
    # a path (it ends in .toml or names a folder: /dev/zero, ./pipe) is read as a file, and
    # load_toml says what is wrong with it (a folder, a pipe, a device, missing)
    if candidate.suffix == ".toml" or os.sep in name:
        return candidate
    path = preset_dir(kind) / f"{name}.toml"
    try:
        if path.is_file():
            return path
    except OSError:  # a name longer than a file's may be: no preset (the error names it below)
        known = ", ".join(preset_names(kind)) or "none"
        shown = name if len(name) <= 64 else f"{name[:40]}...({len(name):,} characters)"
        raise SpecError(f"unknown {kind} preset '{shown}' (known: {known})") from None
    if os.path.lexists(path):  # listed as a preset (a *.toml name), but no regular file
        from nmp.fileio import file_kind

        try:
            what = file_kind(path.stat().st_mode)
        except OSError:
            what = "a symbolic link to nothing"
        raise SpecError(
            f"{kind} preset '{name}' is {what}, not a regular file", file=str(path)
        ) from None
    known = ", ".join(preset_names(kind)) or "none"
    raise SpecError(f"unknown {kind} preset '{name}' (known: {known})")
