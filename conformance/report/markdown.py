"""One escaping function for every piece of text that goes into Markdown the suite writes.

``report.md`` becomes a GitHub job summary and ``diff``'s Markdown a pull-request comment, so text from a
fixture or a report must stay text there: no link, image, mention, heading, raw HTML, code-span break-out or
table-row break. GitHub renders CommonMark with its table and autolink extensions.
"""

from __future__ import annotations

import re

# Characters with a meaning inline or in a table cell, escaped with a backslash (CommonMark lets any ASCII
# punctuation be escaped that way): code spans, emphasis, links and images, raw HTML and entities, cells.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|!&~])")
# Line breaks and other control characters end a table row or reach the reader's terminal: a space instead.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
# GitHub turns these into links or mentions without any markup: an invisible word joiner breaks each pattern.
WORD_JOINER = "\u2060"
_AUTOLINKS = (
    (re.compile("://"), ":" + WORD_JOINER + "//"),
    (re.compile(r"(?i)(www)\."), r"\1" + WORD_JOINER + "."),
    # Before the @ it breaks an e-mail autolink, after it a mention.
    (re.compile(r"@(?=\w)"), WORD_JOINER + "@" + WORD_JOINER),
)


def escape_cell(text: object) -> str:
    """``text`` as literal Markdown text, safe inside a table cell and on one line."""
    escaped = _SPECIAL.sub(r"\\\1", _CONTROL.sub(" ", str(text)))
    for pattern, replacement in _AUTOLINKS:
        escaped = pattern.sub(replacement, escaped)
    return escaped
