"""A report's rows kept out of memory while its files are written (docs/performance.md, "The report in groups").

``conformance.report.build.build_report_in_groups`` writes each finished row to a temporary file as its report.json
line, in the report's order, and keeps only its brief (``conformance.report.brief``) for report.md and the summary.
report.json copies the lines; report.html copies the page's text of each row, written beside it as it was kept
(``page``); anything else that reads the report's ``results`` gets each row parsed as it asks for it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

from conformance.report.brief import Brief, brief_of


def row_text(row: dict[str, Any]) -> str:
    """A row as report.json spells it: sorted keys, no spaces, text as it is, no NaN."""
    return json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class KeptRows(Sequence[dict[str, Any]]):
    """Rows in their report.json spelling, one per line of a temporary file (removed when this is collected),
    with their briefs in memory. Read as a sequence, each row is parsed when asked for: a new dictionary each time.
    ``page``: what a row shows on another page (one line of text, no line break), written to a second temporary file
    as the row is kept, while it is parsed already (``pages``)."""

    def __init__(self, page: Callable[[dict[str, Any]], str] | None = None) -> None:
        self._file = tempfile.TemporaryFile(prefix="conformance-rows-")  # noqa: SIM115 - lives as long as the rows
        self._offsets: list[int] = []
        self._end = 0
        self.briefs: list[Brief] = []
        self._page = page
        self._pages = tempfile.TemporaryFile(prefix="conformance-pages-") if page else None  # noqa: SIM115

    def add(self, row: dict[str, Any]) -> None:
        """Keep one row, after the ones kept before it."""
        data = row_text(row).encode("utf-8") + b"\n"
        self._file.seek(self._end)
        self._file.write(data)
        self._offsets.append(self._end)
        self._end += len(data)
        self.briefs.append(brief_of(row))
        if self._page is not None and self._pages is not None:
            self._pages.write(self._page(row).encode("utf-8") + b"\n")

    def pages(self, page: Callable[[dict[str, Any]], str]) -> Iterator[str]:
        """Each row's ``page`` text, in order: the one written as it was kept when ``page`` is the function this was
        made with, else made now from the row read back."""
        if self._pages is None or page is not self._page:
            yield from map(page, self)
            return
        self._pages.flush()
        self._pages.seek(0)
        for line in self._pages:
            yield line[:-1].decode("utf-8")

    def __len__(self) -> int:
        return len(self._offsets)

    def _line(self, index: int) -> str:
        self._file.seek(self._offsets[index])
        return self._file.readline()[:-1].decode("utf-8")

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(len(self)))]
        row: dict[str, Any] = json.loads(self._line(range(len(self))[index]))
        return row

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for index in range(len(self)):
            yield self[index]

    def texts(self) -> Iterator[str]:
        """Each row's report.json line, in order (read from the file in large blocks)."""
        self._file.flush()
        self._file.seek(0)
        done = 0
        while done < len(self._offsets):
            line = self._file.readline()
            done += 1
            yield line[:-1].decode("utf-8")
            # A reader between two lines (``self[i]``) moves the file: come back to where this one was.
            if done < len(self._offsets) and self._file.tell() != self._offsets[done]:
                self._file.seek(self._offsets[done])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeptRows):
            return list(self.texts()) == list(other.texts())
        return isinstance(other, Sequence) and not isinstance(other, str | bytes) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]
