"""Loading YAML safely, once, keeping the line of every node so errors can point at it."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import yaml

from conformance.engine.files import MAX_FILE_BYTES as MAX_FILE_BYTES  # where the loaders have read it
from conformance.engine.files import read_regular_file
from conformance.errors import InputError, Problem

try:
    SafeLoader: Any = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    warnings.warn("libyaml is not available; case files load with the slower pure-Python YAML parser", stacklevel=1)
    SafeLoader = yaml.SafeLoader

# A case file is a few hundred nodes. Aliases can make a 2 KB file stand for billions of nodes (a "billion
# laughs"), and nesting can exhaust the recursion limit: both are bounded before anything is built.
MAX_NODES = 100_000
MAX_DEPTH = 64
MERGE_TAG = "tag:yaml.org,2002:merge"


def escape_pointer(token: str) -> str:
    """A JSON-pointer token (``~`` and ``/`` escaped)."""
    return token.replace("~", "~0").replace("/", "~1")


def load_yaml(path: Path, shown: str, *, max_bytes: int = MAX_FILE_BYTES) -> tuple[Any, dict[str, int]]:
    """The document and a map from JSON pointer to 1-based line."""
    data = read_regular_file(path, shown, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InputError([Problem(shown, line, f"not UTF-8 (byte 0x{data[error.start]:02x})",
                                  "save the file as UTF-8")]) from None
    loader = SafeLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[str, int] = {}
        if node is not None:
            _Walk(shown, lines).node(node, "", 0, frozenset())
        document = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        mark_line = mark.line + 1 if mark else None
        problem = _one_line(str(error.problem or error.context or "invalid YAML"))
        if "could not determine a constructor" in problem:
            raise InputError([Problem(shown, mark_line, f"YAML tag refused: {problem}",
                                      "case files hold plain data; remove the tag")]) from None
        raise InputError([Problem(shown, mark_line, f"YAML syntax error: {problem}",
                                  "check indentation and quoting on that line")]) from None
    except yaml.reader.ReaderError as error:
        at = text[: error.position].count("\n") + 1 if isinstance(error.position, int) else None
        character = f"U+{error.character:04X}" if isinstance(error.character, int) else repr(error.character)
        raise InputError([Problem(shown, at, f"character {character} is not allowed in YAML",
                                  "remove the control character, or write it as an escape in a quoted string")]
                         ) from None
    except yaml.YAMLError as error:
        raise InputError([Problem(shown, None, f"YAML error: {_one_line(str(error))}", "check the file")]) from None
    finally:
        loader.dispose()
    return document, lines


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _Walk:
    """Indexes every node's line by JSON pointer before the document is built, within MAX_NODES and MAX_DEPTH,
    refusing self-referencing aliases and duplicate keys (``0x1`` and ``1`` are the same key; a merge key's
    entries may be overridden, which is not a duplicate)."""

    def __init__(self, shown: str, lines: dict[str, int]) -> None:
        self.shown = shown
        self.lines = lines
        self.visited = 0
        self.duplicates: list[Problem] = []
        self.keys = SafeConstructorForKeys()

    def node(self, node: Any, pointer: str, depth: int, ancestors: frozenset[int]) -> None:
        self.visited += 1
        line = node.start_mark.line + 1
        if id(node) in ancestors:
            self._fail(line, "an alias refers to a node that contains it (a self-referencing alias)",
                       "replace the alias with the data it should stand for")
        if depth > MAX_DEPTH:
            self._fail(line, f"nested more than {MAX_DEPTH} levels deep", "flatten the structure")
        if self.visited > MAX_NODES:
            self._fail(line, f"the document expands to more than {MAX_NODES} nodes (aliases repeated inside "
                             "aliases?)", "write the data out instead of nesting aliases")
        self.lines.setdefault(pointer, line)
        inside = ancestors | {id(node)}
        if isinstance(node, yaml.MappingNode):
            self._mapping(node, pointer, depth, inside)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.node(item, f"{pointer}/{index}", depth + 1, inside)
        if pointer == "" and self.duplicates:
            raise InputError(self.duplicates)

    def _mapping(self, node: Any, pointer: str, depth: int, inside: frozenset[int]) -> None:
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if key_node.tag == MERGE_TAG:
                # `<<: *base` brings in keys the mapping may then override: indexed, never a duplicate.
                self.node(value_node, pointer, depth + 1, inside)
                continue
            key = str(key_node.value)
            child = f"{pointer}/{escape_pointer(key)}"
            identity = self.keys.identity(key_node)
            if identity in seen:
                # YAML lets the last duplicate win silently; in a case file that hides an edit.
                self.duplicates.append(Problem(self.shown, line,
                                               f"duplicate key '{key}' (first on line {seen[identity]})",
                                               "keep one of them", child))
            seen.setdefault(identity, line)
            self.lines[child] = line
            self.node(value_node, child, depth + 1, inside)
            self.lines[child] = line

    def _fail(self, line: int, message: str, fix: str) -> None:
        raise InputError([Problem(self.shown, line, message, fix)])


class SafeConstructorForKeys(yaml.constructor.SafeConstructor):
    """Builds a scalar key's value (``0x1`` → 1, ``yes`` → True) so equal keys spelled apart are caught."""

    def identity(self, key_node: Any) -> Any:
        """A key node's value as the loader would build it, so keys equal as values compare equal."""
        if not isinstance(key_node, yaml.ScalarNode):
            return ("node", id(key_node))
        try:
            value = self.construct_object(key_node, deep=True)
        except yaml.YAMLError:
            return ("text", key_node.value)
        try:
            hash(value)
        except TypeError:
            return ("text", key_node.value)
        return (type(value).__name__ if not isinstance(value, bool | int | float) else "number", value)


def line_for(lines: dict[str, int], pointer: str) -> int | None:
    """The line of ``pointer`` or of its nearest ancestor that has one."""
    while True:
        if pointer in lines:
            return lines[pointer]
        if not pointer:
            return None
        pointer = pointer.rsplit("/", 1)[0]
