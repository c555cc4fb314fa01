"""Loading YAML safely, once, keeping the line of every node so errors can point at it."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import yaml

from conformance.errors import InputError, Problem

try:
    SafeLoader: Any = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    warnings.warn("libyaml is not available; case files load with the slower pure-Python YAML parser", stacklevel=1)
    SafeLoader = yaml.SafeLoader

MAX_FILE_BYTES = 1_000_000


def escape_pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def load_yaml(path: Path, shown: str, *, max_bytes: int = MAX_FILE_BYTES) -> tuple[Any, dict[str, int]]:
    """The document and a map from JSON pointer to 1-based line."""
    size = path.stat().st_size
    if size > max_bytes:
        raise InputError([Problem(shown, None, f"file is {size} bytes, over the {max_bytes}-byte limit",
                                  "split it, or raise the limit with --max-file-bytes")])
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InputError([Problem(shown, line, f"not UTF-8 (byte 0x{data[error.start]:02x})",
                                  "save the file as UTF-8")]) from None
    loader = SafeLoader(text)
    try:
        node = loader.get_single_node()
        document = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        mark_line = mark.line + 1 if mark else None
        problem = str(error.problem or error.context or "invalid YAML")
        if "could not determine a constructor" in problem:
            raise InputError([Problem(shown, mark_line, f"YAML tag refused: {problem}",
                                      "case files hold plain data; remove the tag")]) from None
        raise InputError([Problem(shown, mark_line, f"YAML syntax error: {problem}",
                                  "check indentation and quoting on that line")]) from None
    except yaml.YAMLError as error:
        raise InputError([Problem(shown, None, f"YAML error: {error}", "check the file")]) from None
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    duplicates: list[Problem] = []
    if node is not None:
        _index(node, "", lines, shown, duplicates)
    if duplicates:
        raise InputError(duplicates)
    return document, lines


def _index(node: Any, pointer: str, lines: dict[str, int], shown: str, duplicates: list[Problem]) -> None:
    lines[pointer] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            child = f"{pointer}/{escape_pointer(key)}"
            line = key_node.start_mark.line + 1
            if key in seen:
                # YAML lets the last duplicate win silently; in a case file that hides an edit.
                duplicates.append(Problem(shown, line, f"duplicate key '{key}' (first on line {seen[key]})",
                                          "keep one of them", child))
            seen.setdefault(key, line)
            lines[child] = line
            _index(value_node, child, lines, shown, duplicates)
            lines[child] = line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index(item, f"{pointer}/{index}", lines, shown, duplicates)


def line_for(lines: dict[str, int], pointer: str) -> int | None:
    """The line of ``pointer`` or of its nearest ancestor that has one."""
    while True:
        if pointer in lines:
            return lines[pointer]
        if not pointer:
            return None
        pointer = pointer.rsplit("/", 1)[0]
