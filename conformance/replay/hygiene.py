"""Fixture hygiene: no secret or personal data in a committed fixture, and no fixture file that no case uses.

``redact`` / ``redact_file`` are what ``conformance redact`` and fixture-writing code run on every recording
before it is saved; ``scan_file`` is what ``conformance validate`` runs over every file under the cases folders.

Where the rules come from. detect-secrets supplies the generic ones: AWS key ids and quoted AWS secrets (the
denylist of its AWSKeyDetector), private-key markers (PrivateKeyDetector), the characters of credentials in a URL
(BasicAuthDetector) and the JWT check (``JwtTokenDetector.is_formally_valid``). Its scan engine is not used: it
reports values, not where they are, so it cannot anchor a match on a token boundary or redact it exactly; its JWT
regex backtracks quadratically (32 s for a 200 KB ``eyJeyJ…`` line); and ``scan_line`` costs 0.7 s over the bundled
cases where these patterns cost well under 0.1 s. Its high-entropy plugins are off: recordings are full of opaque
high-entropy values that are not secrets (encrypted reasoning, thinking signatures, thought signatures). The vendor
shapes (OpenAI, Anthropic, Google, OpenAI organization and project ids, credential headers and fields, e-mail
addresses) are this module's own patterns.

Two rules hold for every pattern:

* A secret starts at the start of a token (not after a letter, digit, ``_`` or ``-``) and ends at its end, so an
  ordinary id such as ``task-…`` is neither flagged nor half-redacted.
* Matching is linear in the line's length. A regex is only slow when many start positions each scan a long run and
  then fail; here a start is a token start (or a literal such as ``://``), the run it scans belongs to that token
  alone, and a long run succeeds. ``tests/test_hygiene.py`` feeds each pattern a 1 MB worst-case line as a hang guard.

Files are read line by line, and a file over ``SCAN_LIMIT_BYTES`` is reported instead of read.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import re
import stat
import tempfile
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from conformance.errors import InputError, Problem
from conformance.report.snapshot import SNAPSHOT_FOLDER

REDACTED = "<redacted>"

SCAN_LIMIT_BYTES = 5 * 1024 * 1024
"""A fixture is a few KB; a bigger file is reported as too large rather than read (it would cost its size in memory)."""

_TOKEN = r"A-Za-z0-9_\-"
_START = rf"(?<![{_TOKEN}])"
_END = rf"(?![{_TOKEN}])"

Span = tuple[int, int]


class Detector(Protocol):
    """One kind of secret: where it may occur (cheap hints) and where exactly it is on a line."""
    @property
    def kind(self) -> str:
        """What the secret is, as a finding names it."""
        ...

    @property
    def hints(self) -> tuple[str, ...]:
        """Lower-case strings of which every secret of this kind, lower-cased, contains one; none: no such string."""
        ...

    def may_occur_in(self, lowered: str) -> bool:
        """False when the lower-cased line cannot hold this kind of secret: the line is then skipped, cheaply."""
        ...

    def spans(self, line: str) -> Iterator[Span]:
        """Where each secret of this kind is in ``line`` (only the secret: a header name is not part of it)."""
        ...


@dataclass(frozen=True, slots=True)
class PatternDetector:
    """A regex; ``group`` is the part that is the secret, ``valid`` rejects look-alikes the regex cannot.

    ``hints``: lower-case strings of which every match, lower-cased, contains one. A line with none of them is
    skipped without running the regex: most lines have none, and the scan costs a third of what it would.
    """

    kind: str
    pattern: re.Pattern[str]
    group: int | str = 0
    valid: Callable[[re.Match[str]], bool] | None = None
    hints: tuple[str, ...] = ()

    def may_occur_in(self, lowered: str) -> bool:
        """Whether the lower-cased line holds a hint of this secret (skips the regex otherwise)."""
        return _has_hint(lowered, self.hints)

    def spans(self, line: str) -> Iterator[Span]:
        """Where on ``line`` each secret is, as (start, end)."""
        for match in self.pattern.finditer(line):
            if self.valid is None or self.valid(match):
                yield match.span(self.group)


def _has_hint(lowered: str, hints: tuple[str, ...]) -> bool:
    return not hints or any(hint in lowered for hint in hints)


_QUOTE = re.compile(r"[\"']")
_KEY_END = re.compile(r"-{4,5} ?END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)? ?-{4,5}")
# Lines that can sit inside a key block written over several lines (PEM body and headers, PuTTY fields).
_KEY_BODY = re.compile(r"[A-Za-z0-9+/=]*|(?:Proc-Type|DEK-Info|Comment|Encryption|Public-Lines|Private-Lines"
                       r"|Private-MAC|Private-Hash|Key-Derivation|Argon2-[A-Za-z]+): .*")


@dataclass(frozen=True, slots=True)
class KeyBlockDetector:
    """A private key runs from its BEGIN marker to its END marker, or to the end of the quoted string or line.

    Each marker's region stops at the next marker or quote, so the regions do not overlap: linear time.
    """

    kind: str
    begin: re.Pattern[str]
    hints: tuple[str, ...] = ()

    def may_occur_in(self, lowered: str) -> bool:
        """Whether the lower-cased line holds a hint of this secret (skips the regex otherwise)."""
        return _has_hint(lowered, self.hints)

    def spans(self, line: str) -> Iterator[Span]:
        """Where on ``line`` each secret is, as (start, end)."""
        for start, end, _ in self._blocks(line):
            yield start, end

    def continues_past(self, line: str) -> bool:
        """True when the last key in ``line`` has no END marker and is not inside a quoted string."""
        blocks = list(self._blocks(line))
        return bool(blocks) and blocks[-1][2]

    def _blocks(self, line: str) -> Iterator[tuple[int, int, bool]]:
        markers = list(self.begin.finditer(line))
        for index, marker in enumerate(markers):
            limit = markers[index + 1].start() if index + 1 < len(markers) else len(line)
            quote = _QUOTE.search(line, marker.end(), limit)
            region_end = quote.start() if quote else limit
            closing = _KEY_END.search(line, marker.end(), region_end)
            if closing:
                yield marker.start(), closing.end(), False
            else:
                yield marker.start(), region_end, quote is None and region_end == len(line)


_URL_USER = re.compile(r"://[^\s/?#@:]{1,256}:\Z")


def _is_url_password(match: re.Match[str]) -> bool:
    """``pass@host`` of ``scheme://user:pass@host`` is not an e-mail address (the URL detector takes ``user:pass``).

    Only the 260 characters before the match are looked at, to stay linear.
    """
    return _URL_USER.search(match.string, max(0, match.start() - 260), match.start()) is not None


def _token(body: str) -> re.Pattern[str]:
    """A secret that is a whole token: ``body`` anchored at a token start and a token end."""
    return re.compile(_START + body + _END)


def _named_value(names: str, value: str) -> re.Pattern[str]:
    """``name: value`` / ``"name": "value"`` / ``name=value``; group ``secret`` is the value.

    The value starts a token by construction (after ``:``, ``=`` or a quote). The name may end a longer one
    (``GEMINI_API_KEY``, ``googleApiKey``): without the separator and a long value, nothing matches, so
    ``invalid_api_key`` in an error message is not flagged. Case-insensitive in ASCII only, so that a lower-cased
    line holds a hint whenever the pattern matches.
    """
    name = rf"[\"']?(?:{names})[\"']?"
    return re.compile(rf"{name}\s*[:=]\s*[\"']?(?P<secret>{_NOT_REDACTED}{value})", re.IGNORECASE | re.ASCII)


_T = f"[{_TOKEN}]"
_NOT_REDACTED = f"(?!{re.escape(REDACTED)})"
# A value ends where JSON, a header, a query string or a call would end it.
_FIELD_VALUE = r"[^\s\"',;&<>(){}\[\]]{8,}"
_HEADER_VALUE = rf"(?:(?:bearer|basic|token|digest)\s+)?{_FIELD_VALUE}"
_AWS_SECRET_VALUE = r"[A-Za-z0-9/+=\\]{16,}"  # with ``\`` for a JSON writer that escapes ``/``
_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key", "x-amz-security-token")

# Vendor shapes detect-secrets does not know (or, for OpenAI, only in the legacy ``T3BlbkFJ`` form).
_OWN_DETECTORS: tuple[PatternDetector, ...] = (
    PatternDetector("Anthropic API key", _token(rf"sk-ant-{_T}{{16,}}"), hints=("sk-ant-",)),
    PatternDetector("OpenAI API key", _token(rf"sk-(?!ant-)(?:proj-|svcacct-|admin-)?{_T}{{20,}}"), hints=("sk-",)),
    # Organization and project ids name a person's or a company's account: personal data, not secrets.
    PatternDetector("OpenAI organization id", _token(r"org-[A-Za-z0-9]{24}"), hints=("org-",)),
    PatternDetector("OpenAI project id", _token(r"proj_[A-Za-z0-9]{24}"), hints=("proj_",)),
    PatternDetector("Google API key", _token(rf"AIza{_T}{{35,}}"), hints=("aiza",)),
    PatternDetector("Google OAuth access token", _token(rf"ya29\.{_T}{{20,}}(?:\.{_T}+)*"), hints=("ya29.",)),
    PatternDetector("AWS secret access key",
                    _named_value(r"(?:aws[_-]?)?secret[_-]?access[_-]?key", _AWS_SECRET_VALUE), "secret",
                    hints=("secret",)),
    PatternDetector("AWS session token", _named_value(r"(?:aws[_-]?)?session[_-]?token", _AWS_SECRET_VALUE),
                    "secret", hints=("session",)),
    PatternDetector("credential header", _named_value("|".join(_HEADERS), _HEADER_VALUE), "secret", hints=_HEADERS),
    PatternDetector("API key field", _named_value(r"api_?key", _FIELD_VALUE), "secret", hints=("apikey", "api_key")),
    PatternDetector("bearer token", re.compile(
        rf"{_START}bearer\s+(?P<secret>{_NOT_REDACTED}[A-Za-z0-9._~+/\-]{{16,}}=*)", re.IGNORECASE | re.ASCII),
        "secret", hints=("bearer",)),
    # The local part starts where a run of local-part characters starts (not at every dot in it): one start per
    # run is what keeps a 200 KB ``a.a.a…`` line linear.
    # International (a leading `+`, then groups of digits parted by spaces or dashes, 8 to 15 digits in all) or the
    # North American `(NXX) NXX-XXXX` form: personal data. Bare digit runs (ids, counts, timestamps) and decimal
    # numbers (`+3.14159265`, coordinates) are left alone.
    PatternDetector("phone number", re.compile(
        r"(?<![\w+/=.])(?:\+[1-9]\d{0,2}(?:[ \-]\(?\d{1,8}\)?){2,5}|\([2-9]\d{2}\) ?[2-9]\d{2}-\d{4})"
        r"(?![\w/+=]|[.,]\d)"),
        valid=lambda match: 8 <= sum(character.isdigit() for character in match.group()) <= 15, hints=("+", "(")),
    # E.164 written whole (`+14155550134`) and the North American `415-555-0134` form (ids and dates are not:
    # 3-3-4 digits with dashes, not inside a longer number).
    PatternDetector("phone number", re.compile(r"(?<![\w+/=.%-])\+[1-9]\d{9,14}(?![\w/+=]|[.,]\d)"), hints=("+",)),
    PatternDetector("phone number", re.compile(r"(?<![\w+/=.-])[2-9]\d{2}-[2-9]\d{2}-\d{4}(?![\w/=-]|[.,]\d)")),
    # An address percent-encoded in a URL or a form (`jane.doe%40example.org`).
    PatternDetector("e-mail address", re.compile(
        r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._+\-]+%40[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}" + _END,
        re.IGNORECASE), hints=("%40",)),
    # Vendor and platform keys: Groq, xAI, Hugging Face, GitHub fine-grained tokens, Stripe test keys (detect-secrets
    # knows classic GitHub tokens and live Stripe keys only; its patterns are added in ``detectors``).
    PatternDetector("Groq API key", _token(r"gsk_[A-Za-z0-9]{40,}"), hints=("gsk_",)),
    PatternDetector("xAI API key", _token(r"xai-[A-Za-z0-9]{40,}"), hints=("xai-",)),
    PatternDetector("Hugging Face token", _token(r"hf_[A-Za-z0-9]{30,}"), hints=("hf_",)),
    PatternDetector("GitHub token", _token(r"github_pat_[A-Za-z0-9_]{40,}"), hints=("github_pat_",)),
    PatternDetector("Stripe key", _token(r"(?:sk|rk|pk)_(?:test|live)_[A-Za-z0-9]{16,}"), hints=("_test_", "_live_")),
    # A signed URL stays usable until it expires: Azure SAS `sig=`, GCS `X-Goog-Signature`, SigV4 `X-Amz-Signature`,
    # CloudFront and SigV2 `Signature=`. The signature is the secret.
    PatternDetector("URL signature", re.compile(
        r"[?&;](?:sig|x-goog-signature|x-amz-signature|signature)=(?P<secret>(?!<redacted>)[^&\s\"'<>#\\]{16,})",
        re.IGNORECASE | re.ASCII), "secret", hints=("sig=", "signature=")),
    # Account identifiers: a Google Cloud project named in an error (`project 576…`, `?project=…`, `projects/<id>`)
    # and a bare 12-digit AWS account id beside the word "account".
    # A project number (digits) after "project" or in `?project=`; a project id (lower case, starting with a
    # letter, with a digit in it) only in a resource path `projects/<id>`: "project PRJ-2041" in an answer is not one.
    PatternDetector("Google Cloud project", re.compile(
        r"(?:\bproject |[?&]project=|\bprojects/)(?P<secret>\d{6,})(?![\w-])", re.ASCII), "secret",
        hints=("project",)),
    PatternDetector("Google Cloud project", re.compile(
        r"\bprojects/(?P<secret>(?!<redacted>)[a-z][a-z0-9-]{4,28}[a-z0-9])(?![\w-])", re.ASCII), "secret",
        valid=lambda match: any(c.isdigit() for c in match["secret"]), hints=("projects/",)),
    # The all-zero account is the placeholder record's redaction writes (conformance/replay/record.py).
    PatternDetector("AWS account id", re.compile(r"\barn:aws[\w-]*:[\w-]*:[\w-]*:(?P<secret>\d{12})(?=:)", re.ASCII),
                    "secret", valid=lambda match: match["secret"] != "000000000000", hints=("arn:aws",)),
    PatternDetector("AWS account id", re.compile(r"\baccount(?:[ _-]?id)?\W{0,3}(?P<secret>\d{12})(?!\d)",
                                                 re.IGNORECASE | re.ASCII), "secret", hints=("account",)),
    PatternDetector("e-mail address", re.compile(
        r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}" + _END),
        valid=lambda match: not _is_url_password(match), hints=("@",)),
)


@functools.cache
def detectors() -> tuple[Detector, ...]:
    """Every detector, built on first use: importing detect-secrets costs about 0.25 s that ``run`` need not pay."""
    # detect-secrets routes all warnings to its logger when imported (logging.captureWarnings); keep ours as they were.
    shown_warning = warnings.showwarning
    try:
        from detect_secrets.plugins.aws import AWSKeyDetector  # noqa: PLC0415
        from detect_secrets.plugins.basic_auth import RESERVED_CHARACTERS, SUB_DELIMITER_CHARACTERS  # noqa: PLC0415
        from detect_secrets.plugins.github_token import GitHubTokenDetector  # noqa: PLC0415
        from detect_secrets.plugins.gitlab_token import GitLabTokenDetector  # noqa: PLC0415
        from detect_secrets.plugins.jwt import JwtTokenDetector  # noqa: PLC0415
        from detect_secrets.plugins.private_key import PrivateKeyDetector  # noqa: PLC0415
        from detect_secrets.plugins.slack import SlackDetector  # noqa: PLC0415
        from detect_secrets.plugins.stripe import StripeDetector  # noqa: PLC0415
    finally:
        warnings.showwarning = shown_warning
    key_id, quoted_secret = (pattern.pattern for pattern in AWSKeyDetector.denylist)
    # Its private-key markers are plain strings, so each is its own hint. It lacks PKCS #8 encrypted keys and
    # PuTTY's version 3 files.
    markers = (*(pattern.pattern for pattern in PrivateKeyDetector.denylist), "BEGIN ENCRYPTED PRIVATE KEY",
               "PuTTY-User-Key-File-3")
    marker_hints = tuple(marker.lower() for marker in markers)
    url_character = rf"[^{re.escape(RESERVED_CHARACTERS + SUB_DELIMITER_CHARACTERS)}\s]"
    jwt_part = rf"[{_TOKEN}]+=*"
    # detect-secrets' token patterns, each a whole token here (they match inside longer words otherwise).
    plugins = tuple(PatternDetector(kind, re.compile(f"{_START}(?:{pattern.pattern}){_END}", pattern.flags))
                    for kind, plugin in (
        ("GitHub token", GitHubTokenDetector), ("GitLab token", GitLabTokenDetector), ("Slack token", SlackDetector),
        ("Stripe key", StripeDetector)) for pattern in plugin.denylist)
    return (
        *_OWN_DETECTORS,
        *plugins,
        PatternDetector("AWS access key id", _token(f"(?:{key_id})")),
        # The secret is the quoted 40 characters: the quotes are its boundary.
        PatternDetector("AWS secret access key", re.compile(quoted_secret, re.IGNORECASE | re.ASCII), 1,
                        hints=("aws",)),
        PatternDetector("JSON Web Token", _token(rf"eyJ{jwt_part}\.{jwt_part}(?:\.(?:{jwt_part})?)?"),
                        valid=lambda match: bool(JwtTokenDetector.is_formally_valid(match.group())), hints=("eyj",)),
        KeyBlockDetector("private key", re.compile(rf"(?:-{{4,5}} ?)?(?:{'|'.join(markers)})(?: ?-{{4,5}})?"),
                         hints=marker_hints),
        # ``user:password`` of ``scheme://user:password@host``: both go, the user name is personal data.
        PatternDetector("credentials in a URL", re.compile(rf"://(?P<secret>{url_character}+:{url_character}+)@"),
                        "secret", hints=("://",)),
    )


@dataclass(frozen=True, slots=True)
class SecretHit:
    """One suspected secret: where it is and what it looks like (never the value itself)."""

    path: Path
    line: int
    kind: str


class TooLargeToScan(Exception):
    """The file is over ``SCAN_LIMIT_BYTES``; it was not read."""

    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


def line_kinds(line: str) -> list[str]:
    """The kinds of secret in one line, each once, in detector order."""
    kinds: list[str] = []
    for detector in _candidates(line):
        if detector.kind not in kinds and next(detector.spans(line), None) is not None:
            kinds.append(detector.kind)
    return kinds


def _candidates(line: str) -> Iterable[Detector]:
    """The detectors whose secrets may be in ``line``, by their hints.

    One search for any hint first: about one line in a thousand of the bundled cases has one, so most lines cost
    that search and the few detectors without hints.
    """
    lowered = line.lower()
    if _hint_pattern().search(lowered) is None:
        return _detectors_without_hints()
    return [detector for detector in detectors() if detector.may_occur_in(lowered)]


@functools.cache
def _hint_pattern() -> re.Pattern[str]:
    hints = {hint for detector in detectors() for hint in detector.hints}
    return re.compile("|".join(re.escape(hint) for hint in sorted(hints)))


@functools.cache
def _detectors_without_hints() -> tuple[Detector, ...]:
    return tuple(detector for detector in detectors() if not detector.hints)


def scan_text(path: Path, text: str) -> list[SecretHit]:
    """Findings in ``text``, numbered as the lines of the file ``path`` would be: each line, then what its JSON
    values say once decoded and a stream's pieces joined (``conformance.replay.joined_scan``) where no line said it."""
    findings = [SecretHit(path, number, kind) for number, line in enumerate(_lines(text), start=1)
                for kind in line_kinds(_without_newline(line)[0])]
    return findings + _joined_findings(path, text, findings)


def _joined_findings(path: Path, text: str, line_findings: list[SecretHit]) -> list[SecretHit]:
    from conformance.replay.joined_scan import joined_kinds  # noqa: PLC0415 - only files that hold JSON need it

    if "{" not in text:
        return []
    seen = {finding.kind for finding in line_findings}
    return [SecretHit(path, number, f"{kind}, once decoded or joined") for number, kind in joined_kinds(text)
            if kind not in seen]


def scan_file(path: Path, limit: int = SCAN_LIMIT_BYTES) -> list[SecretHit]:
    """Findings in ``path``, read one line at a time; raises TooLargeToScan (nothing read) and OSError."""
    with path.open("rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        if size > limit:
            raise TooLargeToScan(size)
        findings: list[SecretHit] = []
        lines = []
        for number, raw in enumerate(_bounded_lines(stream, limit), start=1):
            text = _without_newline(raw.decode("utf-8", errors="replace"))[0]
            lines.append(text)
            findings.extend(SecretHit(path, number, kind) for kind in line_kinds(text))
        return findings + _joined_findings(path, "\n".join(lines), findings)


def _bounded_lines(stream: BinaryIO, limit: int) -> Iterator[bytes]:
    """The stream's lines; raises TooLargeToScan once more than ``limit`` bytes came (the file grew as we read)."""
    remaining = limit
    while raw := stream.readline(remaining + 1):
        remaining -= len(raw)
        if remaining < 0:
            raise TooLargeToScan(limit - remaining)
        yield raw


def redact(text: str) -> str:
    """``text`` with every suspected secret replaced by ``<redacted>``; header and field names are kept."""
    redactor = _Redactor()
    return "".join(redactor.line(line) for line in _lines(text)) + redactor.finish()


def redact_file(path: Path) -> bool:
    """Redact ``path`` in place; True when something was replaced (a clean file is left untouched).

    A symbolic link is followed on purpose: the secret is in the target, so the target is rewritten and the link
    kept (replacing the link by a redacted copy would leave the secret in the target). A file with other hard links
    is refused for the same reason. The text is streamed line by line to a temporary file beside the target, which
    gets the target's permission bits (and owner, where allowed) and replaces it with ``os.replace``: a reader sees
    the old file or the new one. Raises InputError for a file that is missing, unreadable, not a regular file or not
    UTF-8; the file is then unchanged.
    """
    target, status = _redaction_target(path)
    try:
        handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as error:
        raise _cannot_write(path, error) from None
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as output:
            changed = _redact_stream(path, target, output)
            output.flush()
            os.fsync(output.fileno())  # the new text is on disk before it replaces the old
        if changed:
            _copy_ownership(status, temporary)
            os.replace(temporary, target)
        return changed
    except OSError as error:
        raise _cannot_write(path, error) from None
    finally:
        temporary.unlink(missing_ok=True)


def _cannot_write(path: Path, error: OSError) -> InputError:
    return InputError([Problem(str(path), None, f"cannot rewrite it: {error}",
                               "make its folder writable (the new text is written beside it first)")])


def _redaction_target(path: Path) -> tuple[Path, os.stat_result]:
    try:
        target = path.resolve(strict=True)
        status = target.stat()
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop (Python 3.11)
        raise InputError([Problem(str(path), None, f"cannot read it: {error}", "check the path")]) from None
    if not stat.S_ISREG(status.st_mode):
        raise InputError([Problem(str(path), None, "not a regular file", "name a recorded fixture file")])
    if status.st_nlink > 1:
        raise InputError([Problem(
            str(path), None, f"has {status.st_nlink} hard links; replacing it would leave the secret under the others",
            "redact a copy (cp FILE COPY && mv COPY FILE), then run redact again")])
    return target, status


def _redact_stream(path: Path, target: Path, output: BinaryIO) -> bool:
    try:
        stream = target.open("rb")
    except OSError as error:
        raise InputError([Problem(str(path), None, f"cannot read it: {error}", "check the path")]) from None
    redactor = _Redactor()
    changed = False
    with stream:
        for number, raw in enumerate(stream, start=1):
            line = _decoded(path, number, raw)
            cleaned = redactor.line(line)
            changed = changed or cleaned != line
            output.write(cleaned.encode("utf-8"))
    output.write(redactor.finish().encode("utf-8"))
    return changed


def _decoded(path: Path, number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        problem = Problem(str(path), number, f"not UTF-8 (byte 0x{raw[error.start]:02x})",
                          "save it as UTF-8, then run redact again")
        raise InputError([problem]) from None


def _copy_ownership(status: os.stat_result, temporary: Path) -> None:
    """Give the new file the old one's permission bits and, where we may, its owner (mkstemp makes 0600, ours)."""
    os.chmod(temporary, stat.S_IMODE(status.st_mode))
    new = temporary.stat()
    if (new.st_uid, new.st_gid) != (status.st_uid, status.st_gid) and hasattr(os, "chown"):
        # Only root may give a file away; otherwise it stays ours, as an editor would leave it.
        with contextlib.suppress(PermissionError):
            os.chown(temporary, status.st_uid, status.st_gid)


class _Redactor:
    """Redacts line after line, following a private key written over several lines to its END marker."""

    def __init__(self) -> None:
        self._in_key = False
        self._held_newline = ""  # the BEGIN line's newline: dropped if the END marker comes, else given back

    def line(self, line: str) -> str:
        body, newline = _without_newline(line)
        if self._in_key:
            closing = _KEY_END.search(body)
            if closing:
                self._in_key, self._held_newline = False, ""
                return self._redacted(body[closing.end():], newline)
            if _KEY_BODY.fullmatch(body.strip()):
                return ""
            self._in_key = False
            return self.finish() + self._redacted(body, newline)
        return self._redacted(body, newline)

    def finish(self) -> str:
        held, self._held_newline = self._held_newline, ""
        return held

    def _redacted(self, body: str, newline: str) -> str:
        spans: list[Span] = []
        key_continues = False
        for detector in _candidates(body):
            spans.extend(detector.spans(body))
            key_continues = key_continues or (isinstance(detector, KeyBlockDetector) and detector.continues_past(body))
        if key_continues:  # the key's body is on the next lines: hold the newline until we know where it ends
            self._in_key, self._held_newline = True, newline
            return _replaced(body, spans)
        return _replaced(body, spans) + newline


def _replaced(line: str, spans: Iterable[Span]) -> str:
    """``line`` with each span replaced by ``<redacted>``; overlapping or touching spans become one."""
    pieces: list[str] = []
    position = 0
    for start, end in sorted(spans):
        if pieces and start <= position:  # e.g. a key inside a header value, both found
            position = max(position, end)
            continue
        pieces += [line[position:start], REDACTED]
        position = end
    pieces.append(line[position:])
    return "".join(pieces)


def _folder_problem(folder: Path, shown: Callable[[Path], str], known: Collection[str]) -> Problem:
    name = folder.name
    if name in known:
        return Problem(shown(folder), None, f"fixtures for {name} are here, but the case does not list {name} under "
                       "providers:", f"add '{name}: {{}}' under providers: in {folder.parent.name}/case.yaml")
    near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    hint = f"did you mean '{near[0]}'? " if near else ""
    return Problem(shown(folder), None, f"folder {name}/ names no known provider, so none of its fixtures runs",
                   f"{hint}rename it to a provider id ({', '.join(sorted(known))}), or load your adapter with "
                   "--adapter")


def _lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only (as files are read), each with its newline."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _without_newline(line: str) -> tuple[str, str]:
    for newline in ("\r\n", "\n"):
        if line.endswith(newline):
            return line[: -len(newline)], newline
    return line, ""


def unused_fixtures(root: Path, used: set[Path]) -> list[Path]:
    """Files under the case folders that no case names (the world file, case files and snapshots excepted)."""
    unused = []
    snapshots = root / SNAPSHOT_FOLDER
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name in ("case.yaml", "world.yaml") or path.name.startswith("."):
            continue
        if snapshots in path.parents:
            continue
        if path.resolve() not in used:
            unused.append(path)
    return unused


def hygiene_problems(root: Path, used: set[Path], shown: Callable[[Path], str],
                     known: Collection[str] = ()) -> list[Problem]:
    """Unused fixtures and suspected secrets under a case folder, as problems for ``validate``. Unused files in a
    folder beside a case file are one problem for the folder: a provider id misspelt there (``openai_chat/``)
    would otherwise drop that vendor out of the run without a word."""
    problems: list[Problem] = []
    folders: set[Path] = set()
    live = {parent for path in used for parent in path.parents}
    for path in unused_fixtures(root, used):
        folder = next((parent for parent in path.parents if (parent.parent / "case.yaml").is_file()), None)
        if folder is None or folder.resolve() in live:
            problems.append(Problem(shown(path), None, "fixture file is not used by any case",
                                    "delete it, or name it from a case's providers.<id>.turns"))
        elif folder not in folders:
            folders.add(folder)
            problems.append(_folder_problem(folder, shown, known))
    for path in sorted(root.rglob("*")):
        if path.is_file():
            problems.extend(_scan_problems(path, shown))
    return problems


def _scan_problems(path: Path, shown: Callable[[Path], str]) -> list[Problem]:
    """What the secret scan says about one file; a file it cannot read is a problem, never silently passed."""
    try:
        findings = scan_file(path)
    except TooLargeToScan as error:
        return [Problem(shown(path), None,
                        f"too large to scan for secrets ({error.size:,} bytes, limit {SCAN_LIMIT_BYTES:,})",
                        "delete it: a recorded fixture is a few KB")]
    except OSError as error:
        return [Problem(shown(path), None, f"cannot be read to scan for secrets ({error.strerror or error})",
                        "make it readable, or delete it")]
    return [Problem(shown(finding.path), finding.line, f"looks like a secret or personal data ({finding.kind})",
                    "remove it, or run `conformance redact FILE` to replace it with <redacted>")
            for finding in findings]
