"""The AWS requests code makes, as botocore sends them: a ``before-call`` hook that names each ``service.Operation``."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator
from unittest import mock

import botocore.session

from scheduler_runtime.aws import context

SERVICES = ("dynamodb", "sqs")


@contextmanager
def aws_calls() -> Iterator[list[str]]:
    """Each request (``"dynamodb.GetItem"``, ``"sqs.SendMessage"``, ...) made inside the block, in order: by the
    runtime's clients (its current context's) and by clients of any botocore session created meanwhile (an operator
    action's, such as :func:`cdk_delayed_scheduler.operator.redrive`). The tests' own boto3 clients are not recorded."""
    made: list[str] = []

    def record(model: Any, **_: Any) -> None:
        made.append(f"{model.service_model.service_name}.{model.name}")

    ctx = context.current()
    clients = [ctx.client(service) for service in SERVICES]
    real_session = botocore.session.get_session

    def recording_session(*args: Any, **kwargs: Any) -> Any:
        session = real_session(*args, **kwargs)
        session.register("before-call", record)
        return session

    for client in clients:
        client.meta.events.register("before-call", record)
    try:
        with mock.patch.object(botocore.session, "get_session", recording_session):
            yield made
    finally:
        for client in clients:
            client.meta.events.unregister("before-call", record)
