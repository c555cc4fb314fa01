"""Writing the report set so that a reader always sees one whole set from one run.

``report.json``, ``report.md`` and ``report.html`` in the report folder are links into ``.current/``, and
``.current`` is a link to a complete set folder under ``.sets/``. A run writes its set into a new folder, then
replaces the ``.current`` link in one ``rename``: before it the old set is whole, after it the new one is,
whatever kills the process (Ctrl-C, SIGTERM, SIGKILL, a full disk). One writer at a time holds
``.report.lock``; a second is refused with a clear message rather than mixing two sets. Where links cannot
be made (some Windows setups), each file is still replaced atomically, one after the other.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from filelock import FileLock, Timeout

from conformance.engine.sanitize import terminal_safe
from conformance.errors import InputError, Problem

CURRENT = ".current"
SETS = ".sets"
LOCK = ".report.lock"


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: what was about to be written is not, and the previous reports stay."""


def handle_sigterm_as_interrupt() -> None:
    """From now on SIGTERM unwinds like Ctrl-C (``finally`` blocks run, temporary files are removed)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


def write_reports(texts: Mapping[str, str | bytes | Iterable[str]], directory: Path) -> list[Path]:
    """Write the named report texts into ``directory`` as one set (see the module docstring). A text is a string,
    its UTF-8 bytes, or its pieces in order (each encoded and written as it comes, so a report of thousands of rows
    is never held whole); an error while the pieces are made leaves the previous set as it was.

    Raises InputError, naming the folder, when it cannot be written (a file in its place, no permission, a
    full disk, another writer); the previous set is then left as it was."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(directory / LOCK), timeout=0)
        with lock:
            _write_set(texts, directory)
    except Timeout:
        raise InputError([Problem(str(directory), None, "another run is writing reports to this folder",
                                  "wait for it to finish, or pass a different --report-dir")]) from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise InputError([Problem(str(directory), None, f"cannot write the reports: {reason}",
                                  "pass a writable --report-dir (a folder, with free space); the previous "
                                  "reports are unchanged")]) from None
    return [directory / name for name in texts]


def _write_set(texts: Mapping[str, str | bytes | Iterable[str]], directory: Path) -> None:
    sets = directory / SETS
    # Never through a link: a `.sets` (or `.current`) that points elsewhere would make the clean-up below remove
    # whatever it points at (docs/hardening.md).
    for name in (SETS, CURRENT):
        if (directory / name).is_symlink() and not (name == CURRENT and _points_into(directory / name, SETS)):
            raise InputError([Problem(str(directory / name), None, "is a symbolic link; the report folder's own "
                                      "bookkeeping is never written or removed through a link",
                                      f"remove the link ({directory / name}) and run again")])
    sets.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=sets, prefix="set-"))
    swapped = False
    try:
        for name, text in texts.items():
            _write_file(folder / name, text)
        with signals_deferred():
            swapped = _swap_in(folder, directory, list(texts))
    finally:
        if not swapped:
            shutil.rmtree(folder, ignore_errors=True)
    _remove_old_sets(sets, keep=folder.name)


def _write_file(path: Path, text: str | bytes | Iterable[str]) -> None:
    """One report file, from its text, its UTF-8 bytes or its pieces."""
    with open(path, "wb") as stream:
        if isinstance(text, bytes | str):
            stream.write(text if isinstance(text, bytes) else text.encode("utf-8"))
        else:
            for piece in text:
                stream.write(piece.encode("utf-8"))
        stream.flush()
        os.fsync(stream.fileno())
    os.chmod(path, 0o666 & ~_umask())  # a report is for everyone to read, as any file the user writes


def _swap_in(folder: Path, directory: Path, names: list[str]) -> bool:
    """Point ``.current`` at ``folder`` in one rename, then make sure each report name links through it.
    Returns False (and copies file by file) where links cannot be made."""
    try:
        _replace_with_link(directory / CURRENT, f"{SETS}/{folder.name}")
    except (OSError, NotImplementedError):
        for name in names:
            os.replace(folder / name, directory / name)
        return False
    for name in names:
        target = f"{CURRENT}/{name}"
        link = directory / name
        if not (link.is_symlink() and os.readlink(link) == target):
            _replace_with_link(link, target)
    return True


def _replace_with_link(path: Path, target: str) -> None:
    temporary = path.with_name(f"{path.name}.{os.getpid()}.link")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    os.symlink(target, temporary)
    try:
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _remove_old_sets(sets: Path, keep: str) -> None:
    """Sets no link points at any more, including those a killed run left behind: only the folders this writer
    makes (``set-*``, real directories); a link among them is unlinked, never followed."""
    for entry in sets.iterdir():
        if entry.name == keep or not entry.name.startswith("set-"):
            continue
        if entry.is_symlink():
            entry.unlink(missing_ok=True)
        elif entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)


def _points_into(link: Path, folder: str) -> bool:
    """True when ``link`` is the writer's own ``.current``: a relative link to a set inside ``folder``."""
    target = os.readlink(link)
    return not os.path.isabs(target) and target.startswith(f"{folder}/") and ".." not in Path(target).parts


def write_atomic(path: Path, text: str) -> None:
    """Write one file so that a reader sees the old file or the new one, never half of one."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise InputError([Problem(str(path), None, f"cannot write: {error.strerror or error}",
                                  "pass a writable path")]) from None
    temporary = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        mode = path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask()
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as error:
        raise InputError([Problem(str(path), None, f"cannot write: {error.strerror or error}",
                                  "pass a writable path with free space; the file is unchanged")]) from None
    finally:
        temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM while a few renames swap files in (a report set, a recorded provider folder)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # The Python-level handlers are swapped, not the thread's signal mask: a signal sent to the process may be
    # delivered to any thread (a server's), and its Python handler still runs in this one at once.
    pending: list[int] = []

    def hold(signum: int, frame: object) -> None:
        pending.append(signum)

    previous = {number: signal.signal(number, hold) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if pending:
            signal.raise_signal(pending[0])  # now, to the handler that was in place


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def append_step_summary(markdown: str) -> None:
    """GitHub Actions shows ``$GITHUB_STEP_SUMMARY`` on the run page. It is a convenience: when it cannot be
    written, a warning says so and the run's own verdict (its exit code) stands."""
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary_file:
        return
    try:
        with open(summary_file, "a", encoding="utf-8") as stream:
            stream.write(markdown + "\n")
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        print(terminal_safe(f"warning: GITHUB_STEP_SUMMARY ({summary_file}) not written: {reason}"), file=sys.stderr)
