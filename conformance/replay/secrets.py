"""The secret detectors: what a credential or a piece of personal data looks like in a recording, each a pattern
anchored on token boundaries (``conformance.replay.hygiene`` scans and redacts with them).

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
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

REDACTED = "<redacted>"
"""What a secret is replaced with."""

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
KEY_END = re.compile(r"-{4,5} ?END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)? ?-{4,5}")
# Lines that can sit inside a key block written over several lines (PEM body and headers, PuTTY fields).
KEY_BODY = re.compile(r"[A-Za-z0-9+/=]*|(?:Proc-Type|DEK-Info|Comment|Encryption|Public-Lines|Private-Lines"
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
            closing = KEY_END.search(line, marker.end(), region_end)
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
