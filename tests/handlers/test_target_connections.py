"""A Lambda target's answer is read to its end, so the invoke's connection goes back to the pool.

An unread ``Payload`` keeps its connection checked out: urllib3 cannot reuse it, and every
invoke opens a new connection (on AWS, a new TLS handshake billed to each delivery). The
local engine showed it as one accepted connection per delivery.
"""

import io

import pytest
from botocore.response import StreamingBody

from scheduler_runtime.aws.targets import DeliveryError, deliver

pytestmark = pytest.mark.usefixtures("virtual_clock")

TARGET = {"type": "lambda", "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:f"}
ENVELOPE = {"id": "a", "dueAt": "2030-01-01T00:00:00.000Z", "payload": {}, "dedupeKey": "a#1"}


class _Lambda:
    def __init__(self, answer: bytes, error: str | None = None) -> None:
        self.raw = io.BytesIO(answer)
        self.error = error

    def invoke(self, **_: object) -> dict:
        response = {"StatusCode": 200, "Payload": StreamingBody(self.raw, len(self.raw.getvalue()))}
        if self.error:
            response["FunctionError"] = self.error
        return response


class _Context:
    def __init__(self, client: _Lambda) -> None:
        self._client = client

    def client(self, service: str) -> _Lambda:
        assert service == "lambda"
        return self._client


def test_a_successful_invoke_reads_the_answer_to_its_end():
    client = _Lambda(b'{"ok": true, "padding": "' + b"x" * 4096 + b'"}')
    deliver(_Context(client), TARGET, ENVELOPE)
    assert client.raw.tell() == len(client.raw.getvalue())


def test_a_function_error_is_a_failed_delivery_with_the_answer_as_its_reason():
    client = _Lambda(b'{"errorMessage": "boom"}', error="Unhandled")
    with pytest.raises(DeliveryError, match="boom"):
        deliver(_Context(client), TARGET, ENVELOPE)
    assert client.raw.tell() == len(client.raw.getvalue())
