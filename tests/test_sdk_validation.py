"""Every success body we ship is a real wire shape: it validates against the vendor's official SDK types.

The SDKs are test dependencies only. Bodies named ``unknown-*`` hold a deliberately unknown value, so the
strict SDK types must reject them; that proves the value really is unknown to the vendor's own types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conformance.engine.cases import load_cases
from tests.helpers import CASES, FIXTURES, fixture, fixture_names


def _openai_response(body: Any) -> None:
    from openai.types.responses import Response

    Response.model_validate(body, strict=False)


def _openai_chat(body: Any) -> None:
    from openai.types.chat import ChatCompletion

    ChatCompletion.model_validate(body)


def _anthropic_message(body: Any) -> None:
    from anthropic.types import Message

    Message.model_validate(body)


def _gemini(body: Any) -> None:
    from google.genai.types import GenerateContentResponse

    GenerateContentResponse.model_validate(body)


def _bedrock_converse(body: Any) -> None:
    from tests.botocore_shapes import validate_converse_response

    validate_converse_response(body)


VALIDATORS: dict[str, Callable[[Any], None]] = {
    "openai-responses": _openai_response,
    "openai-chat": _openai_chat,
    "anthropic-messages": _anthropic_message,
    "gemini": _gemini,
    "bedrock-converse": _bedrock_converse,
}


def _case_bodies(expect_unsupported: bool) -> list[Any]:
    params = []
    for case in load_cases([CASES]):
        for provider, fixtures in sorted(case.providers.items()):
            kinds = case.expectation_for(provider).turns or ()
            for index, turn in enumerate(fixtures.turns, start=1):
                if turn.status >= 400 or not isinstance(turn.body, dict) or provider not in VALIDATORS:
                    continue
                unsupported = index <= len(kinds) and kinds[index - 1] == "unsupported"
                if unsupported == expect_unsupported:
                    params.append(pytest.param(provider, turn.body, id=f"{case.id}-{provider}-turn{index}"))
    return params


@pytest.mark.parametrize(("provider", "body"), _case_bodies(expect_unsupported=False))
def test_case_success_bodies_validate_against_the_vendor_sdk(provider: str, body: Any) -> None:
    VALIDATORS[provider](body)


@pytest.mark.parametrize(("provider", "body"), _case_bodies(expect_unsupported=True))
def test_case_bodies_expected_unsupported_are_rejected_by_the_vendor_sdk(provider: str, body: Any) -> None:
    with pytest.raises(Exception):  # noqa: B017 - the vendor's own types must not know the shape either
        VALIDATORS[provider](body)


@pytest.mark.parametrize(
    ("provider", "name"),
    [(provider, name) for provider in VALIDATORS for name in fixture_names(provider, "body-")],
)
@pytest.mark.filterwarnings("ignore:.*is not a valid.*:UserWarning")  # google-genai warns on open enums
def test_adapter_fixture_bodies_validate_against_the_vendor_sdk(provider: str, name: str) -> None:
    VALIDATORS[provider](fixture(provider, name))


@pytest.mark.parametrize(
    ("provider", "name"),
    [(provider, name) for provider in VALIDATORS for name in fixture_names(provider, "unknown-")],
)
def test_unknown_value_fixtures_are_rejected_by_the_strict_sdk_types(provider: str, name: str) -> None:
    with pytest.raises(Exception):  # noqa: B017 - pydantic's ValidationError, whatever the SDK re-exports
        VALIDATORS[provider](fixture(provider, name))


def test_every_provider_with_fixtures_has_a_validator() -> None:
    assert sorted(path.name for path in FIXTURES.iterdir() if path.is_dir()) == sorted(VALIDATORS)
