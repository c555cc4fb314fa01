"""The case items' snapshots, stored and compared through syrupy (docs/report.md, "Snapshots").

The files stay where and as a reviewer reads them: ``<cases>/__snapshots__/<case>/<lane>.json`` (the classification)
and ``<lane>.requests.json`` (the requests, whole), one key per mode, a stream entry equal to the body written
``"same as body"``. Each case × lane × mode is one syrupy snapshot, named after its item (``normal[gemini-body]``) and
kept as its mode's key, so syrupy's own behaviour applies to case items as to a user's syrupy tests: a snapshot no
item uses fails the session (``--snapshot-warn-unused`` makes it a warning), ``--snapshot-update`` writes and deletes,
``--snapshot-details`` lists, and the summary line counts them.

Syrupy relates a test to its snapshot files through the test's file (``syrupy.location.PyTestLocation``); a case
item's file is ``case.yaml``, so syrupy is shown ``SyrupyNode``, a face of the item whose path is the case's own
snapshot folder. The seams used are syrupy 7's: ``AbstractSyrupyExtension`` (several snapshots per file, as its Amber
extension keeps them), ``SnapshotAssertion`` built for the item, and the session's item filter (``pytest_plugin``).
"""

from __future__ import annotations

import collections
import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import syrupy.session
from syrupy.assertion import SnapshotAssertion
from syrupy.constants import SNAPSHOT_EMPTY_COLLECTION_KEY, SNAPSHOT_UNKNOWN_COLLECTION_KEY
from syrupy.data import Snapshot, SnapshotCollection, SnapshotCollections
from syrupy.exceptions import SnapshotDoesNotExist, TaintedSnapshotError
from syrupy.extensions.base import AbstractSyrupyExtension
from syrupy.location import PyTestLocation
from syrupy.report import SnapshotReport

from conformance.report.files import write_atomic
from conformance.report.snapshot import SAME_AS_BODY, SNAPSHOT_FOLDER, differences, folded, snapshot_lock

VIRTUAL_SUFFIX = ".case"
"""The face's file is ``<cases>/__snapshots__/<case>/<case>.case`` (never written): its stem is the case id."""
LANES_KEY = pytest.StashKey[frozenset[str]]()
"""The stack lanes this session runs (the plugin sets it): a lane's files are judged only when its lane ran."""
NODE_IDS_KEY = pytest.StashKey[bool]()
"""Set when node ids inside a cases folder were asked for: syrupy cannot tell which sibling modes were meant."""
_PSEUDO = {SNAPSHOT_EMPTY_COLLECTION_KEY, SNAPSHOT_UNKNOWN_COLLECTION_KEY}


def _text(value: Any) -> str:
    """The canonical text syrupy compares: compact, so that json's C encoder writes it (an indent would not)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _file_text(value: Any) -> str:
    """The text a snapshot file holds: indented, for the reviewer."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _mode_of(name: str) -> str:
    """``normal[gemini-stream]`` → ``stream`` (a mode holds no ``-``)."""
    return name[:-1].rsplit("-", 1)[1]


def _site(location: PyTestLocation) -> tuple[str, str, str] | None:
    """(snapshot folder, case id, lane) of a case item's face; None for any other test. Read from what survives
    syrupy's trip between xdist processes: the path and the test's name."""
    return _site_of(str(location.filepath), str(location.testname))


@functools.lru_cache(maxsize=65536)
def _site_of(filepath: str, name: str) -> tuple[str, str, str] | None:
    """``_site`` of a path and a test name (syrupy asks again for every file it relates to every item). String
    operations, not ``pathlib``: syrupy passes normalized paths, and these run tens of thousands of times."""
    folder = os.path.dirname(filepath)
    case = os.path.basename(folder)
    snapshots = os.path.dirname(folder)
    if os.path.basename(filepath) != f"{case}{VIRTUAL_SUFFIX}" or os.path.basename(snapshots) != SNAPSHOT_FOLDER:
        return None
    if not (name.startswith(f"{case}[") and name.endswith("]")):
        return None
    return snapshots, case, name[len(case) + 1:-1].rsplit("-", 1)[0]


@functools.lru_cache(maxsize=65536)
def _location_of(filepath: str, name: str, suffix: str) -> str | None:
    """The snapshot file of a case item's face for one extension's suffix: ``<cases>/__snapshots__/<case>/<lane>``
    and the suffix; None for any other test."""
    site = _site_of(filepath, name)
    return None if site is None else os.path.join(site[0], site[1], f"{site[2]}{suffix}")


_PARSED: collections.OrderedDict[str, tuple[tuple[int, int], dict[str, Any], dict[str, str | None]]] = \
    collections.OrderedDict()
"""The last parses of snapshot files, by path, with the (mtime, size) each was read at, the most recent last: an
item's modes are checked one after another, so a few hundred cover them; a file that changed is read again."""
_PARSED_KEPT = 512
_MODES: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {}
"""The modes each snapshot file holds, by path, with its (mtime, size): all syrupy's discovery needs of a file, kept
for every file (a few names each), so the discovery at the session's end reads no file again."""


class _Steady:
    """Whether the snapshot files stay as they are until the session's end (``steady_files``): a session that does not
    update snapshots writes none and deletes none, so a file read once is not looked at again (one ``stat`` per
    check less). A file another program changes during such a session is read as it was at first."""

    on = False


def steady_files(on: bool) -> None:
    """From now on the files are steady (``on``: a session that writes no snapshot starts), or no longer (it ended,
    or it updates them). Either way what was read before is forgotten: another session may have changed it."""
    _PARSED.clear()
    _MODES.clear()
    _Steady.on = on


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        _PARSED.pop(path, None)
        _MODES.pop(path, None)
        return None
    return status.st_mtime_ns, status.st_size


def _parsed(key: str, steady: bool = True) -> tuple[tuple[int, int], dict[str, Any], dict[str, str | None]] | None:
    """The cache entry of one snapshot file, read again when its (mtime, size) moved (unless the files are steady,
    ``steady_files``, and ``steady`` allows it): its stamp, its entries by mode (never changed in place) and the
    canonical texts of the modes asked for so far; None without a file; ValueError when the file is not a snapshot."""
    if steady and _Steady.on:
        kept = _PARSED.get(key)
        if kept is not None:
            _PARSED.move_to_end(key)
            return kept
    stamp = _stamp(key)
    if stamp is None:
        return None
    cached = _PARSED.get(key)
    if cached is None or cached[0] != stamp:
        try:
            with open(key, encoding="utf-8") as file:
                stored = json.load(file)
        except FileNotFoundError:
            return None
        if not isinstance(stored, dict):
            raise ValueError("not an object of modes")
        cached = _PARSED[key] = (stamp, stored, {})
        _MODES[key] = (stamp, tuple(stored))
        if len(_PARSED) > _PARSED_KEPT:
            _PARSED.popitem(last=False)
    else:
        _PARSED.move_to_end(key)
    return cached


def _load(path: Path | str) -> dict[str, Any] | None:
    """The stored entries by mode (a copy: callers may change it); None without a file; ValueError when the file is
    not a snapshot. Always as the file is now: what is written is merged with it."""
    cached = _parsed(str(path), steady=False)
    return None if cached is None else dict(cached[1])


def _stored_text(path: str, mode: str) -> str | None:
    """The canonical text (``_text``) of the entry ``mode`` has in the file, ``"same as body"`` resolved: what syrupy
    would compare an item's serialized entry with, spelled once per file and mode; None when there is none;
    ValueError when the file is not a snapshot."""
    cached = _parsed(path)
    if cached is None:
        return None
    texts = cached[2]
    if mode not in texts:
        entry = cached[1].get(mode)
        if entry == SAME_AS_BODY:
            entry = cached[1].get("body")
        texts[mode] = None if entry is None else _text(entry)
    return texts[mode]


def _modes(path: str) -> tuple[str, ...]:
    """The modes a snapshot file holds (``()`` without a file); ValueError when the file is not a snapshot."""
    if _Steady.on and path in _MODES:
        return _MODES[path][1]
    stamp = _stamp(path)
    if stamp is None:
        return ()
    known = _MODES.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    cached = _parsed(path)
    return () if cached is None else tuple(cached[1])


def _store(path: Path, stored: dict[str, Any]) -> None:
    _PARSED.pop(str(path), None)
    _MODES.pop(str(path), None)
    if stored:
        write_atomic(path, _file_text(dict(sorted(stored.items()))))
    else:
        path.unlink(missing_ok=True)


class CaseSnapshotExtension(AbstractSyrupyExtension):
    """The classification snapshots, ``<lane>.json``."""

    suffix = ".json"
    file_extension = "json"
    snapshot_dirname = SNAPSHOT_FOLDER  # its own: --snapshot-dirname rebinds only syrupy's base class
    # Queued by syrupy and written at the session's end, one write per file holding every mode the session wrote
    # (merged under the file's lock with what other processes wrote): a fresh task set writes each file once.
    write_immediately = False

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        """The case's snapshot folder; for anyone else's test, a folder that is never there."""
        site = _site(test_location)
        if site is None:
            return str(Path(test_location.filepath).parent / SNAPSHOT_FOLDER / "__conformance__")
        return os.path.join(site[0], site[1])

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        """``<cases>/__snapshots__``: the files of a case that is gone are found too."""
        site = _site(test_location)
        if site is None:
            return str(Path(cls.dirname(test_location=test_location)) / "none")
        return site[0]

    @classmethod
    def get_location(cls, *, test_location: PyTestLocation, index: Any) -> str:
        """``<cases>/__snapshots__/<case>/<lane><suffix>``."""
        location = _location_of(str(test_location.filepath), str(test_location.testname), cls.suffix)
        assert location is not None, "only case items store snapshots here"
        return location

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: Any = 0) -> str:
        """The item's name: one snapshot per item and file."""
        return str(test_location.snapshot_name)

    @classmethod
    def matches_test_location(cls, *, test_location: PyTestLocation, snapshot_location: str) -> bool:
        """An item owns exactly its two files."""
        location = _location_of(str(test_location.filepath), str(test_location.testname), cls.suffix)
        return location is not None and location == os.path.normpath(snapshot_location)

    def is_snapshot_location(self, *, location: str) -> bool:
        """A file of this extension's suffix and of no longer one (``.json`` is not ``.requests.json``)."""
        name = os.path.basename(location)
        return name.endswith(self.suffix) and not any(
            name.endswith(other.suffix) for other in EXTENSIONS if len(other.suffix) > len(self.suffix))

    def owns_snapshot_collection(self, *, filepath: str, test_location: PyTestLocation) -> bool:
        """Files one level below ``<cases>/__snapshots__``; a stack lane's only when this session runs that lane."""
        site = _site(test_location)
        if site is None or os.path.dirname(os.path.dirname(os.path.normpath(filepath))) != site[0] or \
                not self.is_snapshot_location(location=filepath):
            return False
        lane = os.path.basename(filepath)[: -len(self.suffix)]
        config = getattr(test_location.item, "config", None)
        return "@" not in lane or config is None or lane in config.stash.get(LANES_KEY, frozenset())

    def discover_snapshots(self, *, test_location: PyTestLocation,
                           ignore_extensions: list[str] | None = None) -> SnapshotCollections:
        """Syrupy's walk, except when node ids chose single items (their sibling modes would read as unused)."""
        config = getattr(test_location.item, "config", None)
        if config is not None and config.stash.get(NODE_IDS_KEY, False):
            return SnapshotCollections()
        found = super().discover_snapshots(test_location=test_location, ignore_extensions=ignore_extensions)
        session = getattr(config, "_syrupy", None)
        if session is not None:  # which extension deletes a file's unused modes (``matched`` skips the early walk)
            session._extensions.update({collection.location: self for collection in found if collection.has_snapshots})
        return found

    def read_snapshot_collection(self, *, snapshot_location: str) -> SnapshotCollection:
        """One snapshot per mode the file holds; an unreadable file holds none (unused unless an item rewrites it)."""
        case = os.path.basename(os.path.dirname(snapshot_location))
        lane = os.path.basename(snapshot_location)[: -len(self.suffix)]
        collection = SnapshotCollection(location=snapshot_location)
        try:
            modes = _modes(snapshot_location)
        except ValueError:
            modes = ()
        for mode in modes:
            collection.add(Snapshot(name=f"{case}[{lane}-{mode}]"))
        return collection

    def read_snapshot_data_from_location(self, *, snapshot_location: str, snapshot_name: str,
                                         session_id: str) -> str | None:
        """The entry of the name's mode, ``"same as body"`` resolved; a file that is not a snapshot is tainted
        (``--snapshot-update`` rewrites it)."""
        try:
            return _stored_text(snapshot_location, _mode_of(snapshot_name))
        except ValueError:
            raise TaintedSnapshotError(snapshot_data=None) from None

    def serialize(self, data: Any, **kwargs: Any) -> str:
        """Canonical JSON text: equal entries give equal text."""
        return _text(data)

    def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Iterator[str]:
        """Per field, as the items' own messages say it."""
        yield from differences(json.loads(str(snapshot_data) or "null"), json.loads(str(serialized_data) or "null"))

    @classmethod
    def write_snapshot_collection(cls, *, snapshot_collection: SnapshotCollection,
                                  name_order: Any = None) -> None:
        """Merge each mode into the shared file, folding a stream equal to the body (``snapshot.folded``)."""
        path = Path(snapshot_collection.location)
        path.parent.mkdir(parents=True, exist_ok=True)
        with snapshot_lock(path):
            try:
                stored = _load(path) or {}
            except ValueError:
                stored = {}
            for snapshot in snapshot_collection:
                stored = folded(stored, _mode_of(snapshot.name), json.loads(str(snapshot.data)))
            _store(path, stored)

    def delete_snapshots(self, *, snapshot_location: str, snapshot_names: set[str]) -> None:
        """Drop the modes named; a file left empty (or unreadable) goes."""
        path = Path(snapshot_location)
        with snapshot_lock(path):
            try:
                stored = _load(path) or {}
            except ValueError:
                stored = {}
            for mode in {_mode_of(name) for name in snapshot_names if name not in _PSEUDO}:
                if mode == "body":  # spell out the entries that pointed at it first
                    stored = {other: stored.get("body") if value == SAME_AS_BODY else value
                              for other, value in stored.items()}
                stored.pop(mode, None)
            _store(path, stored)


class RequestSnapshotExtension(CaseSnapshotExtension):
    """The request snapshots, ``<lane>.requests.json``."""

    suffix = ".requests.json"


EXTENSIONS = (CaseSnapshotExtension, RequestSnapshotExtension)


class _Obj:
    """What ``PyTestLocation`` reads of a test's function: its module and name."""

    def __init__(self, module: str, name: str) -> None:
        self.__module__ = module
        self.__name__ = name


class SyrupyNode:
    """A case item as syrupy sees it: its node id (run status, selection), its name (the snapshot names) and a path in
    the case's snapshot folder, whose stem is the case id, so that syrupy relates the item to ``<case>/*``."""

    def __init__(self, item: Any) -> None:
        self.nodeid = item.nodeid
        self.name = item.name
        self.path, self.filepath, self.obj = _face(str(item.root), item.case.id)
        self.stash = item.stash
        self.config = item.config


@functools.lru_cache(maxsize=4096)
def _face(root: str, case: str) -> tuple[Path, str, _Obj]:
    """The path, its text as syrupy's ``PyTestLocation.filepath`` spells it, and the function face shared by a case's
    items (a case has an item per lane and mode: made once, not once per item)."""
    path = Path(root, SNAPSHOT_FOLDER, case, f"{case}{VIRTUAL_SUFFIX}")
    return path, str(path.absolute()), _Obj(__name__, case)


class SelectionCachedReport(SnapshotReport):
    """Syrupy 7.0's report compares the collected and the selected node ids (``selected_all_collected_items``, a
    property) once for every snapshot file it discovered, which is quadratic in the task set: about 12 s of a
    20,000-item run (docs/performance.md). Both sets are settled when the report is built, and syrupy itself clears
    its other selection caches in ``_invalidate_selection_caches`` when xdist merges worker results; this subclass
    caches the comparison and clears it there too."""

    @functools.cached_property
    def selected_all_collected_items(self) -> bool:
        """Syrupy's own comparison, made once."""
        return bool(SnapshotReport.selected_all_collected_items.__get__(self))

    def _invalidate_selection_caches(self) -> None:
        super()._invalidate_selection_caches()
        self.__dict__.pop("selected_all_collected_items", None)


def cache_selection_check() -> None:
    """Syrupy's session builds ``SelectionCachedReport`` from now on: installed on syrupy's own session module, and
    only while its report class is still syrupy's (another plugin's subclass is left alone)."""
    if vars(syrupy.session).get("SnapshotReport") is SnapshotReport and isinstance(
            vars(SnapshotReport).get("selected_all_collected_items"), property):
        vars(syrupy.session)["SnapshotReport"] = SelectionCachedReport


class NoSyrupy:
    """What an assertion needs of a session when syrupy is not loaded (``-p no:syrupy``): compare, never write."""

    def register_request(self, assertion: Any) -> None:
        """Nothing is discovered: no unused-snapshot check without syrupy."""

    def recall_snapshot(self, extension: Any, test_location: Any, index: Any) -> Any:
        """Read the stored entry."""
        return extension.read_snapshot(test_location=test_location, index=index, session_id="no-syrupy")

    def queue_snapshot_write(self, **_: Any) -> None:
        """Never reached: updating needs syrupy's --snapshot-update."""
        raise RuntimeError("--snapshot-update needs syrupy")


class _Match:
    """One case item's snapshot that matched, as syrupy's report reads an assertion's result (``AssertionResult``):
    where and what, and nothing of the data, which a match does not need to keep."""

    __slots__ = ("snapshot_location", "snapshot_name")
    created = updated = False
    success = True
    final_data = recalled_data = asserted_data = exception = None

    def __init__(self, snapshot_location: str, snapshot_name: str) -> None:
        self.snapshot_location, self.snapshot_name = snapshot_location, snapshot_name

    @property
    def test_location(self) -> None:
        """Read by syrupy's report for failed results only (``xfail``); a match has none."""
        return None


class _FileMatches:
    """The matches of the case items against one snapshot file, registered with syrupy's session as one assertion
    (``SnapshotAssertion``'s face: its session, extension, a test location for syrupy's discovery, and its
    executions): syrupy counts each match as passed and as a use of its snapshot, so unused detection,
    ``--snapshot-update``, ``--snapshot-details`` and the summary line read them as its own assertions, while the
    session keeps two names per item instead of an assertion with both serialized entries."""

    def __init__(self, session: Any, extension: CaseSnapshotExtension, test_location: PyTestLocation) -> None:
        self.session, self.extension, self.test_location = session, extension, test_location
        self.executions: dict[str, _Match] = {}


_MATCHES_KEY = pytest.StashKey[dict[tuple[type[CaseSnapshotExtension], str], _FileMatches]]()


def matched(item: Any, extension: type[CaseSnapshotExtension], text: str) -> bool:
    """True when ``text`` (the item's entry, ``_text``) is the one its snapshot file holds for its mode: the match is
    then registered with the item's syrupy session (``_FileMatches``), with no assertion built. Anything else (no
    file, no entry, another entry, a file that is not a snapshot) is syrupy's to judge and report."""
    node = item.syrupy_node
    location = _location_of(node.filepath, node.name, extension.suffix)
    if location is None:
        return False
    try:
        if _stored_text(location, _mode_of(node.name)) != text:
            return False
    except ValueError:
        return False
    session = getattr(item.config, "_syrupy", None)
    if session is not None:
        files = item.config.stash.setdefault(_MATCHES_KEY, {})
        record = files.get((extension, location))
        if record is None or record.session is not session:  # one syrupy session per pytest config
            record = files[(extension, location)] = _FileMatches(session, extension(), PyTestLocation(node))
            # Syrupy walks the snapshot folder when an assertion of a folder first registers, and again when its
            # report is built at the session's end; the first walk reads every file before any item has (nothing
            # is cached yet), the second reads only the modes the items left in the cache. The walk at the end is
            # enough: it finds the files and says which extension owns each (``discover_snapshots``).
            session._locations_discovered[record.extension.discovery_dirname(test_location=record.test_location)
                                          ].add(extension)
            session.register_request(record)
        record.executions[node.name] = _Match(location, node.name)
    return True


def check(item: Any, extension: type[CaseSnapshotExtension], entry: Any, what: str, shown: Any,
          raw: Any = None) -> list[str]:
    """Compare one item's ``entry`` with its reviewed snapshot through syrupy (``--snapshot-update`` writes it): the
    failure lines, per field; none when it matches. ``shown`` turns a path into what the message names. A match is
    found by comparing canonical texts against the file's, spelled once per file and mode (``matched``); syrupy's
    assertion is built for everything else. ``entry`` may be a function that makes it; ``raw``: the entry before
    its trip through JSON, whose text is tried first (a match on it is a match of the entry: the two differ only in
    the order of keys that are not strings, which JSON spells as strings)."""
    if raw is not None:
        try:
            if matched(item, extension, _text(raw)):
                return []
        except (TypeError, ValueError):
            pass  # keys that do not sort together, or a value JSON cannot spell: the entry decides
    entry = entry() if callable(entry) else entry
    if matched(item, extension, _text(entry)):
        return []
    option = item.config.option
    assertion = SnapshotAssertion(
        session=getattr(item.config, "_syrupy", None) or NoSyrupy(),  # type: ignore[arg-type]
        extension_class=extension,
        test_location=PyTestLocation(item.syrupy_node),
        update_snapshots=getattr(option, "update_snapshots", False),
        update_new_snapshots_only=getattr(option, "update_new_snapshots_only", False),
    )
    if assertion == entry:
        return []
    result = assertion.executions[0]
    where = shown(Path(str(result.snapshot_location)))
    if isinstance(result.exception, TaintedSnapshotError):
        return [f"{where} is not a snapshot file: run pytest --snapshot-update to write it again"]
    if result.exception is not None and not isinstance(result.exception, SnapshotDoesNotExist):
        raise result.exception
    if result.recalled_data is None:
        return [f"no reviewed {what} snapshot for {item.mode} in {where}: run pytest --snapshot-update, review "
                "the new file and commit it"]
    lines = differences(json.loads(str(result.recalled_data)), entry)
    return [f"the {what} left its snapshot {where} [{item.mode}] (review, then accept with pytest "
            "--snapshot-update):", *(f"  {line}" for line in lines)]
