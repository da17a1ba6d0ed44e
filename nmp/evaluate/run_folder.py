"""Where a run lives: the run folder's name under ``--out``, its files, the ``latest`` link to
the newest run, and the checks a new or resumed run makes on its folder before any work
(:mod:`nmp.evaluate.runner` runs the sweep into it)."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import shutil
import stat
from pathlib import Path

from nmp.errors import NmpError
from nmp.evaluate.store import check_log
from nmp.evaluate.sweep import SweepSpec
from nmp.fileio import file_kind, lstat_if_present, others_can_write

RESULTS = "results.jsonl"
ERRORS = "errors.jsonl"
TIMINGS = "timings.jsonl"
WHATIF_FILE = "whatif.jsonl"  # (nmp.evaluate.explain's, loaded only when a run explains)
ENVIRONMENT = "environment.json"
LATEST = "latest"

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*$")
MAX_RUN_CHARS = 200  # a folder name holds 255 bytes; room for a "-2" of a second run


def safe_name(name: str) -> str:
    """``name`` as one folder name: runs of characters other than letters, digits and ``._+-``
    become ``-`` (so ``../x`` cannot leave ``--out``), no leading dot."""
    clean = re.sub(r"[^A-Za-z0-9._+-]+", "-", name).strip(".-")
    return clean or "sweep"


def default_run_name(sweep: SweepSpec) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{safe_name(sweep.name)}-{stamp}"


def check_run_name(run: str) -> None:
    """A ``--run`` name is one folder under ``--out``: no ``/``, no ``..``, no leading dot."""
    if len(run) > MAX_RUN_CHARS:
        raise NmpError(f"--run: a run name is at most {MAX_RUN_CHARS} characters, got {len(run):,}")
    if not _SAFE_NAME.match(run) or run in (".", ".."):
        raise NmpError(
            f"--run {run!r}: a run name is one folder name (letters, digits, '._+-', not "
            "starting with '.'); it cannot contain '/' or '..'"
        )


def resolve_run_dir(base: Path, run: str | None, *, resume: bool, sweep: SweepSpec) -> Path:
    """The run folder: ``base/<run>``; for ``--resume`` without ``--run``, the one ``latest``
    points to; else a new auto-named one (not created here: see
    :func:`nmp.fileio.claim_new_folder`)."""
    if run is not None and not run.strip():  # was ignored: an auto-named folder, silently
        raise NmpError("--run is empty: give a run folder's name")
    if run == LATEST and not resume:
        raise NmpError(f"'{LATEST}' is reserved for the link to the newest run; pick another --run")
    if run is not None:  # `--run ""` is a bad name, not "no name" (it ran, auto-named)
        if run != LATEST:
            check_run_name(run)
        path = base / run
        target = path.resolve() if path.is_symlink() else path
        if path.is_symlink() and not target.exists():
            # a dangling link: the run folder was created wherever it pointed
            raise NmpError(f"--run {run!r}: {path} is a link to nothing ({target})")
        if target.exists() and not target.is_dir():
            # a link to a file: the message named the file and "File exists", not the flag
            raise NmpError(f"--run {run!r}: {path} is not a folder (a file or a link to one)")
        return target
    if resume:
        link = base / LATEST
        if not link.exists():
            raise NmpError(f"nothing to resume: {link} does not exist (give --run NAME)")
        return link.resolve()
    return base / default_run_name(sweep)


# In a copy of a run folder made as ``latest`` where symlinks are not allowed: only a folder
# holding it is replaced by the next run's copy
LATEST_COPY_MARK = ".nmp-latest-copy"


def check_latest(base: Path) -> None:
    """``base/latest`` is absent, a symbolic link, or a copy that :func:`update_latest` made:
    anything else (a folder or file of the user's, a named pipe) is :class:`NmpError` naming
    it, before any work (it was deleted, or the run failed after its first point)."""
    link = base / LATEST
    st = lstat_if_present(link, "check")
    if st is None or stat.S_ISLNK(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode) and os.path.lexists(link / LATEST_COPY_MARK):
        return
    kind = "a file" if stat.S_ISREG(st.st_mode) else file_kind(st.st_mode)
    raise NmpError(
        f"is {kind}, not the link to the latest run that nmp evaluate "
        "keeps there: move it away (or give another --out)",
        file=str(link),
    )


def update_latest(base: Path, run_dir: Path) -> Path:
    """Point ``base/latest`` at ``run_dir``: a relative symlink replaced atomically; where
    symlinks are not allowed, a copy of the run folder. Only a link (or such a copy) is
    replaced (:func:`check_latest`)."""
    link = base / LATEST
    check_latest(base)
    tmp = base / f".{LATEST}.{os.getpid()}"
    _remove_stale_links(base)
    try:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        os.symlink(os.path.relpath(run_dir, base), tmp, target_is_directory=True)
        if not link.is_symlink() and link.is_dir():  # (a copy: checked above)
            shutil.rmtree(link)
        os.replace(tmp, link)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if link.is_symlink():
            link.unlink()
        elif link.exists():
            shutil.rmtree(link)
        shutil.copytree(run_dir, link, symlinks=True)
        (link / LATEST_COPY_MARK).write_text("")
    return link


def _remove_stale_links(base: Path) -> None:
    """The ``.latest.<pid>`` links of runs killed between creating and renaming theirs."""
    for stale in base.glob(f".{LATEST}.*"):
        pid = stale.name.rsplit(".", 1)[-1]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            stale.unlink(missing_ok=True)
        except OSError:
            pass  # alive, another user's


def check_same_plan(run_dir: Path, sweep_name: str, keys: list[str]) -> None:
    """A resumed run folder must hold this sweep's plan: a folder of another sweep (or the same
    sweep edited) would have its sweep.toml overwritten and old and new lines mixed."""
    import json

    from nmp.fileio import open_regular

    path = run_dir / "plan.json"
    try:
        # as the run's logs are read (a regular file, no link followed, no blocking on a
        # pipe): a named pipe blocked the read, a link to /dev/zero never ended
        with open_regular(path, follow_links=False) as fh:
            stored = json.loads(fh.read())
        stored_keys = [p["key"] for p in stored["points"]]
        stored_name = stored.get("sweep")
    except NmpError as exc:
        raise NmpError(f"not a plan nmp evaluate wrote ({exc.message})", file=str(path)) from None
    except RecursionError:
        raise NmpError(
            "not a plan nmp evaluate wrote (nested too deeply)", file=str(path)
        ) from None
    except (OSError, ValueError, KeyError, TypeError):
        raise NmpError("not a plan nmp evaluate wrote", file=str(path)) from None
    if stored_name != sweep_name or set(stored_keys) != set(keys):
        raise NmpError(
            f"{run_dir} holds sweep '{stored_name}' ({len(stored_keys)} points), not this one "
            f"('{sweep_name}', {len(keys)} points, {len(set(keys) - set(stored_keys))} of them "
            f"not in its plan): resume it as it was ('nmp evaluate --resume --run "
            f"{run_dir.name}'), or give another --run"
        )


def check_run_dir(run_dir: Path, *, resume: bool) -> None:
    """A new run needs a folder without results; a resumed one, a folder with a plan that
    only this user could have written (its sweep and results are read back)."""
    if resume:
        for folder in (run_dir.parent, run_dir):
            why = others_can_write(folder)
            if why:
                raise NmpError(f"not resumed from {folder}: {why} (chmod o-w it)")
        if not (run_dir / "plan.json").exists():
            raise NmpError(f"nothing to resume in {run_dir} (no plan.json)")
    elif (run_dir / RESULTS).exists() and (run_dir / RESULTS).stat().st_size > 0:
        raise NmpError(f"{run_dir} already holds results: add --resume, or pick another --run")
    # the logs it reads, appends to or repairs: a link, a pipe or a folder is refused now
    for name in (RESULTS, ERRORS, TIMINGS, WHATIF_FILE, ENVIRONMENT):
        check_log(run_dir / name)
