"""Building the peers of ``benchmarks/peers.py`` from their sources, at the commits the reference
data was recorded with (``data/reference/dram/README.md``): Ramulator 2.1 with its Python
bindings and DRAMsim3's library, each ``-O3`` (see peers.py's docstring for the commands)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PeerSource:
    name: str  # the checkout's folder under the peer directory
    url: str
    commit: str  # the reference's (a prefix of the full hash)
    built: str  # a file (glob) the build leaves in the checkout
    target: str  # make's target ("" for all)


RAMULATOR2 = PeerSource(
    "ramulator2",
    "https://github.com/CMU-SAFARI/ramulator2",
    "c5b1c3a",
    "python/ramulator/_ramulator*.so",
    "",
)
DRAMSIM3 = PeerSource(
    "DRAMsim3", "https://github.com/umd-memsys/DRAMsim3", "2981759", "libdramsim3.so", "dramsim3"
)
# Ramulator's CMake fetches these (FetchContent) at these tags; --deps names local checkouts.
RAMULATOR2_DEPS = {"YAML-CPP": "yaml-cpp", "FMT": "fmt", "NANOBIND": "nanobind"}


def default_peer_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nmp-peers"


def built(root: Path, peer: PeerSource) -> bool:
    return any(root.glob(peer.built))


def checkout_commit(root: Path) -> str:
    """The checkout's commit (abbreviated), or '?' where it is not a git checkout."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=7", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return out.stdout.strip()


def commit_note(root: Path, peer: PeerSource) -> str:
    """``@<commit>``, with a warning where it is not the reference's."""
    got = checkout_commit(root)
    if got.startswith(peer.commit) or peer.commit.startswith(got):
        return f"@{got}"
    return f"@{got} (NOT the reference's {peer.commit}: its speed may differ)"


def _run(argv: list[str], log: Path) -> None:
    print(f"  $ {' '.join(argv)}", flush=True)
    with open(log, "a") as fh:
        subprocess.run(argv, check=True, stdout=fh, stderr=subprocess.STDOUT)


def build_peer(peer: PeerSource, peer_dir: Path, src: str, jobs: int, deps: Path | None) -> Path:
    """Clone ``src`` at the peer's commit into ``peer_dir/<name>`` (where not there yet) and
    build it, as peers.py's docstring says; returns the checkout."""
    root = peer_dir / peer.name
    log = peer_dir / f"{peer.name}-build.log"
    peer_dir.mkdir(parents=True, exist_ok=True)
    if not root.exists():
        _run(["git", "clone", src, str(root)], log)
    _run(["git", "-C", str(root), "checkout", "--quiet", peer.commit], log)
    build = root / "build"
    cmake = ["cmake", "-S", str(root), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"]
    cmake.append("-DCMAKE_CXX_FLAGS=-O3")
    if peer is RAMULATOR2:
        cmake.append(f"-DPython_EXECUTABLE={sys.executable}")
        if deps is not None:
            for var, folder in RAMULATOR2_DEPS.items():
                cmake.append(f"-DFETCHCONTENT_SOURCE_DIR_{var}={deps / folder}")
            cmake.append("-DFETCHCONTENT_FULLY_DISCONNECTED=ON")
    _run(cmake, log)
    _run(["make", "-C", str(build), f"-j{jobs}", *([peer.target] if peer.target else [])], log)
    if not built(root, peer):
        raise FileNotFoundError(f"{root / peer.built} after the build (see {log})")
    return root
