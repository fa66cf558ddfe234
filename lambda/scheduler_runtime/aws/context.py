"""One set of AWS clients and config per process environment, and the clock the handlers read.

Lambda reuses a process across invocations, so clients are built once and
cached (the Powertools pattern of module-level clients). The cache is keyed
by the configuration-bearing environment, so the local engine can point the
same, unchanged handlers at another endpoint by changing the environment.

Clients come from botocore directly: boto3 adds nothing the runtime uses,
and importing it (with s3transfer) would add to every cold start.

A context's ``clock`` is where everything a handler does reads the time and waits: the process's
clock (:data:`~scheduler_runtime.clock.PROCESS`, real unless :func:`scheduler_runtime.clock.use`
set another) unless the context was made with its own.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

import botocore.session
from botocore.config import Config as BotoConfig

from ..clock import PROCESS, Clock
from .config import ENV_KEYS, Config
from .delayer import DelayerQueue

_ENDPOINT_KEYS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_LAMBDA", "AWS_REGION", "AWS_DEFAULT_REGION")
MAX_POOL_CONNECTIONS = 200
"""The connections each client keeps for reuse: as many as a process's threads may call it with at once (a
dispatcher's 160 parallel deliveries, and in the local engine its other functions beside them), so that no
call opens a connection only to discard it after (urllib3's "Connection pool is full" warning)."""
_BOTO_CONFIG = BotoConfig(retries={"mode": "standard", "max_attempts": 3}, max_pool_connections=MAX_POOL_CONNECTIONS)


_ONE_ATTEMPT = BotoConfig(retries={"mode": "standard", "total_max_attempts": 1})
FLOW_CLIENT = "dynamodb-flow"
"""The name of the DynamoDB client that writes limited targets' items: it makes no retries of its own, as the
caller retries what is worth retrying and sends a delivery refused for capacity back to wait
(:class:`~.flow.FlowStore`), rather than hold its dispatcher through the SDK's backoff."""


def client_config(service: str, config: Config) -> BotoConfig:
    """The botocore config of ``service``'s client.

    The Lambda client invokes targets, once per delivery attempt: no SDK retries (a timed-out or
    dropped ``Invoke`` may have run the target; ``targets`` retries only what never reached it), and a
    read timeout of the dispatcher's whole timeout, which is at least the time any invocation has
    left, so a slow target is never cut off, and invoked again, by botocore's 60-second default.
    """
    if service == FLOW_CLIENT:
        return _BOTO_CONFIG.merge(_ONE_ATTEMPT)
    if service != "lambda":
        return _BOTO_CONFIG
    return _BOTO_CONFIG.merge(BotoConfig(read_timeout=config.dispatcher_timeout_seconds,
                                         retries={"mode": "standard", "total_max_attempts": 1}))
_lock = threading.Lock()
_contexts: dict[tuple[str | None, ...], Context] = {}
_models: Any = None
"""The first session's loader of service models, which parses each model once and keeps it. Every later
session shares it (the local engine and the tests make a context per environment they serve, and a
fresh loader would read and parse each model from disk again: about 0.1 s a client)."""


@dataclass
class Context:
    config: Config
    session: Any
    clock: Clock = PROCESS
    _clients: dict[str, Any] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        """The client for ``service``, built once per context."""
        client = self._clients.get(service)
        if client is None:
            with _lock:
                client = self._clients.get(service)
                if client is None:
                    client = self._clients[service] = self.session.create_client(
                        "dynamodb" if service == FLOW_CLIENT else service, config=client_config(service, self.config))
        return client

    @property
    def dynamodb(self) -> Any:
        return self.client("dynamodb")

    @property
    def flow_dynamodb(self) -> Any:
        """DynamoDB without the SDK's retries, for limited targets' items (:data:`FLOW_CLIENT`): built on first use,
        so a deployment without limits never builds it."""
        return self.client(FLOW_CLIENT)

    @property
    def sqs(self) -> Any:
        return self.client("sqs")

    def delayer_queue(self) -> DelayerQueue:
        """The delayer queue on this context's clock, which sends a limited target's messages to the flow queue
        when the deployment has one, and parks in the dead-letter queue."""
        config = self.config
        return DelayerQueue(self.sqs, config.delayer_queue_url, config.dead_letter_queue_url, clock=self.clock,
                            flow_queue_url=config.flow_queue_url, limited=config.flow_limits)


def current() -> Context:
    """The context for the current environment, built on first use."""
    key = tuple(os.environ.get(k) for k in ENV_KEYS + _ENDPOINT_KEYS)
    ctx = _contexts.get(key)
    if ctx is None:
        with _lock:
            ctx = _contexts.get(key)
            if ctx is None:
                ctx = _contexts[key] = Context(config=Config.from_env(), session=_session())
    return ctx


def _session() -> Any:
    """A new botocore session (its own credentials and settings) on the process's one loader of models.
    Called under ``_lock``."""
    global _models
    session = botocore.session.get_session()
    if _models is None:
        _models = session.get_component("data_loader")
    else:
        session.register_component("data_loader", _models)
    return session
