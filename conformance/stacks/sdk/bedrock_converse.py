"""The reference stack for Converse and ConverseStream through ``boto3`` (docs/stacks.md).

boto3 returns plain dicts shaped by botocore's service model, not the wire: botocore parses the JSON body and the
binary event stream, and keeps only what the model declares. The stack reads those dicts — ``stopReason``,
``output.message.content``, ``usage`` — and the events ``converse_stream`` yields, the way a team's code does, and
maps botocore's exceptions: ``ClientError`` by ``Error.Code`` and the HTTP status, ``EventStreamError`` (an
exception frame mid-stream) by its member name.

Facts it relies on (botocore 1.4x; docs/serve.md): ``endpoint_url`` takes the session root as it is; retries off
with ``Config(retries={"total_max_attempts": 1})``; ``AWS_EC2_METADATA_DISABLED=true`` and explicit fake keys keep
the credential chain off the network.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from conformance.kit.task import Task, TranscriptEntry
from conformance.kit.types import ModelResponse
from conformance.providers.bedrock_converse.errors import classify_error
from conformance.providers.bedrock_converse.request import build_request
from conformance.providers.bedrock_converse.response import classify_body
from conformance.providers.bedrock_converse.stream import assemble_stream
from conformance.stacks.stack import Endpoint, Stack, client_for, dropped, retry_options
from conformance.stacks.transports import attach_to_botocore


def _build(endpoint: Endpoint) -> Any:
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # before any client exists
    import boto3  # noqa: PLC0415 - the SDK is an optional extra
    import botocore.config  # noqa: PLC0415

    client = boto3.client(
        "bedrock-runtime", endpoint_url=endpoint.base_url, region_name="us-east-1", aws_access_key_id="replay",
        aws_secret_access_key="replay",
        config=botocore.config.Config(**retry_options(endpoint, {"retries": {"total_max_attempts": 1}})))
    if endpoint.replay is not None:
        attach_to_botocore(client, endpoint.replay)
    return client


def call(task: Task, transcript: Sequence[TranscriptEntry], endpoint: Endpoint) -> ModelResponse:
    """One Converse (or ConverseStream) call through boto3, mapped to one kind."""
    import botocore.exceptions  # noqa: PLC0415

    params = build_request(task, transcript)
    client = client_for(endpoint, _build)
    try:
        if endpoint.stream:
            return _from_events(client.converse_stream(modelId=task.model, **params)["stream"])
        output = client.converse(modelId=task.model, **params)
    except botocore.exceptions.ClientError as error:
        details = error.response.get("Error", {})
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)
        headers = {"x-amzn-errortype": str(details.get("Code", ""))}
        return classify_error(status, {"message": details.get("Message")}, headers)
    except Exception as error:  # only a connection lost mid-answer is read; the rest goes on
        if (lost := dropped(error)) is None:
            raise
        return lost
    # botocore adds ResponseMetadata; the rest is the Converse output as its service model has it.
    return classify_body({key: value for key, value in output.items() if key != "ResponseMetadata"})


def _from_events(stream: Any) -> ModelResponse:
    """The events botocore yields, one ``{member: payload}`` dict each, read as the ``.jsonl`` lines they are; an
    exception frame (``EventStreamError``) becomes the member line it was."""
    import botocore.exceptions  # noqa: PLC0415

    lines: list[bytes] = []
    try:
        for event in stream:
            lines.append(json.dumps(event, separators=(",", ":")).encode("utf-8") + b"\n")
    except botocore.exceptions.EventStreamError as error:
        details = error.response.get("Error", {})
        member = str(details.get("Code") or "internalServerException")
        lines.append(json.dumps({member: {"message": details.get("Message")}}).encode("utf-8") + b"\n")
    return assemble_stream(lines).response


STACK = Stack(id="boto3", provider="bedrock-converse", call=call, requires=("boto3",), packages=("boto3", "botocore"),
              description="boto3 bedrock-runtime, converse and converse_stream")
