"""Reading the suite's input files safely: regular files only, never more than a size cap.

A case file or fixture may be a link to ``/dev/zero`` (an endless read), a FIFO (a read that never returns),
a directory, or a path holding a NUL byte; each is a clear input error instead of a hang or a traceback.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from conformance.errors import InputError, Problem

MAX_FILE_BYTES = 1_000_000
"""The default size cap of one case, world or fixture file (``--max-file-bytes``)."""


def regular_file_problem(path: Path, shown: str, max_bytes: int) -> Problem | None:
    """Why ``path`` cannot be read as an input file (checked without opening it), or None when it can."""
    try:
        info = os.stat(path)
    except ValueError:  # a NUL byte in the path
        return Problem(shown, None, "the path holds a NUL byte", "fix the file name")
    except OSError as error:
        return Problem(shown, None, f"cannot read: {error.strerror}", "check the path")
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) else (
            "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "not a regular file")
        return Problem(shown, None, f"is {kind}, not a regular file", "point it at a regular file")
    if info.st_size > max_bytes:
        return Problem(shown, None, f"file is {info.st_size} bytes, over the {max_bytes}-byte limit",
                       "split or trim it, or raise the limit with --max-file-bytes")
    return None


def read_regular_file(path: Path, shown: str, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (raises InputError otherwise)."""
    problem = regular_file_problem(path, shown, max_bytes)
    if problem is not None:
        raise InputError([problem])
    try:
        # O_NONBLOCK: if the file was swapped for a FIFO since the check, opening it does not wait for a writer.
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(descriptor, "rb") as stream:
            data = stream.read(max_bytes + 1)
    except OSError as error:
        raise InputError([Problem(shown, None, f"cannot read: {error.strerror}", "check the path")]) from None
    if len(data) > max_bytes:
        raise InputError([Problem(shown, None, f"file is over the {max_bytes}-byte limit",
                                  "split or trim it, or raise the limit with --max-file-bytes")])
    return data
