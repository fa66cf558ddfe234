"""Runtime configuration, read from the environment that the construct sets.

| variable | meaning | default |
|---|---|---|
| ``TABLE_NAME`` | the Schedules table | required |
| ``DELAYER_QUEUE_URL`` | the delayer queue | required by enqueuer, dispatcher |
| ``DEAD_LETTER_QUEUE_URL`` | where exhausted deliveries go, with the reason | required by dispatcher |
| ``TARGETS`` | JSON ``{name: {"type": "lambda"|"sqs", ...}}`` | required by api, dispatcher |
| ``SHARD_COUNT`` | timer partitions | ``contract.json`` |
| ``DELAY_WINDOW_SECONDS`` | schedules due within this many seconds go to the delayer queue | ``contract.json`` |
| ``HISTORY_RETENTION_SECONDS`` | final states stay readable this long | ``contract.json`` |
| ``MAX_RECEIVE_COUNT`` | the delayer queue's redrive ``maxReceiveCount`` | ``contract.json`` |
| ``DISPATCHER_TIMEOUT_SECONDS`` | the dispatcher's timeout; the delayer queue's visibility timeout is ``VISIBILITY_TIMEOUT_FACTOR`` times it | ``contract.json`` |
| ``LISTING`` | ``true``: keep the listing index's keys on each record and serve ``GET /schedules`` | ``false`` |
| ``METRICS_NAMESPACE`` | CloudWatch namespace of the EMF metrics | ``DelayedScheduler`` |
| ``LOG_LEVEL`` | the runtime's log level (read by ``observability``) | ``contract.json`` |

Each name is the construct prop's name in capitals (``delay_window`` -> ``DELAY_WINDOW_SECONDS``)
and the local engine's option and flag (``delay_window``, ``--delay-window``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Mapping

from ..core import contract

ENV_KEYS = (
    "TABLE_NAME",
    "DELAYER_QUEUE_URL",
    "DEAD_LETTER_QUEUE_URL",
    "TARGETS",
    "SHARD_COUNT",
    "DELAY_WINDOW_SECONDS",
    "HISTORY_RETENTION_SECONDS",
    "MAX_RECEIVE_COUNT",
    "DISPATCHER_TIMEOUT_SECONDS",
    "LISTING",
    "METRICS_NAMESPACE",
)


class ConfigError(RuntimeError):
    """The function's environment is incomplete or malformed (a deployment bug)."""


@dataclass(frozen=True)
class Config:
    table_name: str
    delayer_queue_url: str = ""
    dead_letter_queue_url: str = ""
    targets: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    default_target: str = contract.DEFAULT_TARGET_NAME
    shard_count: int = contract.DEFAULT_SHARD_COUNT
    delay_window_seconds: int = contract.DEFAULT_DELAY_WINDOW_SECONDS
    history_retention_seconds: int = contract.DEFAULT_HISTORY_RETENTION_SECONDS
    max_receive_count: int = contract.DEFAULT_MAX_RECEIVE_COUNT
    dispatcher_timeout_seconds: int = contract.DEFAULT_DISPATCHER_TIMEOUT_SECONDS
    metrics_namespace: str = "DelayedScheduler"
    listing: bool = False

    @property
    def visibility_timeout_seconds(self) -> int:
        """The delayer queue's visibility timeout: a failed or unfinished receive comes back after it."""
        return contract.VISIBILITY_TIMEOUT_FACTOR * self.dispatcher_timeout_seconds

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Config":
        env = os.environ if env is None else env
        if not env.get("TABLE_NAME"):
            raise ConfigError("TABLE_NAME is not set")
        try:
            targets = json.loads(env.get("TARGETS") or "{}")
        except ValueError as exc:
            raise ConfigError(f"TARGETS is not valid JSON: {exc}") from None
        if not isinstance(targets, dict):
            raise ConfigError("TARGETS must be a JSON object of name -> target")
        return cls(
            table_name=env["TABLE_NAME"],
            delayer_queue_url=env.get("DELAYER_QUEUE_URL", ""),
            dead_letter_queue_url=env.get("DEAD_LETTER_QUEUE_URL", ""),
            targets=targets,
            shard_count=_positive_int(env, "SHARD_COUNT", contract.DEFAULT_SHARD_COUNT),
            delay_window_seconds=_positive_int(env, "DELAY_WINDOW_SECONDS", contract.DEFAULT_DELAY_WINDOW_SECONDS),
            history_retention_seconds=_positive_int(
                env, "HISTORY_RETENTION_SECONDS", contract.DEFAULT_HISTORY_RETENTION_SECONDS),
            max_receive_count=_positive_int(env, "MAX_RECEIVE_COUNT", contract.DEFAULT_MAX_RECEIVE_COUNT),
            dispatcher_timeout_seconds=_positive_int(
                env, "DISPATCHER_TIMEOUT_SECONDS", contract.DEFAULT_DISPATCHER_TIMEOUT_SECONDS),
            metrics_namespace=env.get("METRICS_NAMESPACE") or "DelayedScheduler",
            listing=_flag(env, "LISTING"),
        )


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < 1:
        raise ConfigError(f"{name} must be >= 1, got {value}")
    return value


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = (env.get(name) or "false").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigError(f"{name} must be true or false, got {raw!r}")
    return raw == "true"
