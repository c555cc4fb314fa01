"""``conformance comment FILE``: the gate's Markdown as a pull-request comment, updated in place.

In a GitHub Actions job of a ``pull_request`` event it reads ``GITHUB_TOKEN`` (or ``GH_TOKEN``),
``GITHUB_REPOSITORY``, ``GITHUB_EVENT_PATH`` (the pull request's number) and ``GITHUB_API_URL``; the job needs
``permissions: pull-requests: write``. The comment is found again by the marker the gate writes on its first line
(``conformance.commands.gate.MARKER``) and its author, the workflow's bot (``github-actions[bot]``; another app's login
in ``CONFORMANCE_COMMENT_AUTHOR``): the first run posts it, every later run edits that comment (REST API: "List issue
comments", "Update an issue comment", "Create an issue comment"). The comment is a convenience: when it cannot be
written (a pull request from a fork gets a read-only token) a warning says so and the exit code is 0, as the gate's
own step already gave the verdict.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from conformance.commands.gate import MARKER
from conformance.engine.files import read_regular_file
from conformance.errors import InputError, Problem

MAX_COMMENT_CHARS = 65_000  # GitHub refuses a comment body over 65,536 characters
TIMEOUT_S = 30
BOT = os.environ.get("CONFORMANCE_COMMENT_AUTHOR", "github-actions[bot]")


def post_comment(path: Path) -> int:
    """Post or update the comment; returns the exit code (0, or 2 for a missing file)."""
    body = read_regular_file(path, str(path), 16 * 1024 * 1024).decode("utf-8", errors="replace")
    if not body.startswith(MARKER):
        body = f"{MARKER}\n{body}"
    if len(body) > MAX_COMMENT_CHARS:
        body = body[:MAX_COMMENT_CHARS] + "\n\n… cut at GitHub's comment limit: the whole text is in the job summary " \
                                          "and the artifacts.\n"
    number = _pull_request_number()
    if number is None:
        print("conformance comment: not a pull_request event; no comment written")
        return 0
    token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN")
    repository = os.environ.get("GITHUB_REPOSITORY", "")
    if not token or "/" not in repository:
        raise InputError([Problem("GITHUB_TOKEN / GITHUB_REPOSITORY", None, "not set",
                                  "pass env: GITHUB_TOKEN: ${{ github.token }} to the step")])
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    import urllib.error  # the HTTP client loads when a comment is posted, not for --help

    try:
        existing = _find(api, repository, number, token)
        if existing is None:
            _call("POST", f"{api}/repos/{repository}/issues/{number}/comments", token, {"body": body})
            print(f"conformance comment: posted on pull request #{number}")
        else:
            _call("PATCH", f"{api}/repos/{repository}/issues/comments/{existing}", token, {"body": body})
            print(f"conformance comment: updated comment {existing} on pull request #{number}")
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = f"HTTP {error.code}" if isinstance(error, urllib.error.HTTPError) else str(error)
        print(f"::warning title=conformance comment::the pull-request comment was not written ({reason}); a pull "
              "request from a fork gets a read-only token. The job summary has the same text.", file=sys.stderr)
    return 0


def _pull_request_number() -> int | None:
    event = os.environ.get("GITHUB_EVENT_PATH")
    if not event or not Path(event).is_file():
        return None
    try:
        number = json.loads(Path(event).read_text(encoding="utf-8")).get("pull_request", {}).get("number")
    except (ValueError, AttributeError):
        return None
    return number if isinstance(number, int) else None


def _find(api: str, repository: str, number: int, token: str) -> int | None:
    """The id of the comment that starts with the marker, or None."""
    for page in range(1, 51):
        comments = _call("GET", f"{api}/repos/{repository}/issues/{number}/comments?per_page=100&page={page}", token)
        if not isinstance(comments, list) or not comments:
            return None
        for comment in comments:
            # Only the workflow's own comment: anyone can start a comment with the marker.
            user = comment.get("user") if isinstance(comment, dict) else None
            if isinstance(user, dict) and user.get("type") == "Bot" and user.get("login") == BOT \
                    and str(comment.get("body", "")).startswith(MARKER):
                return int(comment["id"])
        if len(comments) < 100:
            return None
    return None


def _call(method: str, url: str, token: str, payload: dict[str, Any] | None = None) -> Any:
    import urllib.request

    data = json.dumps(payload).encode("utf-8") if payload is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={  # noqa: S310 - the GitHub API URL
        "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json",
        "User-Agent": "conformance-gate"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310 - the GitHub API URL
        text = response.read().decode("utf-8")
    return json.loads(text) if text else None


def add_parser(commands: Any) -> None:
    """``conformance comment``'s options."""
    comment = commands.add_parser("comment", help="post the gate's comment.md on the pull request, updated in place")
    comment.add_argument("file", type=Path, help="the comment.md conformance gate wrote")


def run(arguments: Any) -> int:
    """Post or update the comment; 0 even when it cannot be written (module docstring)."""
    return post_comment(arguments.file)
