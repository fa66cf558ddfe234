"""Runtime configuration, read from the environment that the construct sets.

Every variable's name comes from ``contract.json`` (``environment``), through :data:`contract.ENV`:

| ``contract.ENV`` field | variable | meaning | default |
|---|---|---|---|
| ``table_name`` | ``TABLE_NAME`` | the Schedules table | required |
| ``delayer_queue_url`` | ``DELAYER_QUEUE_URL`` | the delayer queue | required by enqueuer, dispatcher |
| ``flow_queue_url`` | ``FLOW_QUEUE_URL`` | the flow queue: the delayer queue of the deliveries to limited targets, so that their backlog waits apart from every other timer's | none: they use the delayer queue |
| ``dead_letter_queue_url`` | ``DEAD_LETTER_QUEUE_URL`` | where exhausted deliveries go, with the reason | required by dispatcher |
| ``targets`` | ``TARGETS`` | JSON ``{name: {"type": <kind>, ...}}``, each checked at load against ``contract.json``'s ``targetTypes`` | required by api, dispatcher |
| ``shard_count`` | ``SHARD_COUNT`` | timer partitions | ``contract.json`` |
| ``delay_window_seconds`` | ``DELAY_WINDOW_SECONDS`` | schedules due within this many seconds go to the delayer queue | ``contract.json`` |
| ``history_retention_seconds`` | ``HISTORY_RETENTION_SECONDS`` | final states stay readable this long | ``contract.json`` |
| ``max_receive_count`` | ``MAX_RECEIVE_COUNT`` | the delayer queue's redrive ``maxReceiveCount``; also every delivery's default (and most) ``retry.maxAttempts`` | ``contract.json`` |
| ``retry_max_age_seconds`` | ``RETRY_MAX_AGE_SECONDS`` | a delivery's default ``retry.maxAgeSeconds`` | ``contract.json`` |
| ``max_lateness_seconds`` | ``MAX_LATENESS_SECONDS`` | a schedule's default ``maxLatenessSeconds`` | none: no bound |
| ``dispatcher_timeout_seconds`` | ``DISPATCHER_TIMEOUT_SECONDS`` | the dispatcher's timeout; the delayer queue's visibility timeout is ``VISIBILITY_TIMEOUT_FACTOR`` times it | ``contract.json`` |
| ``dispatcher_max_batching_window_seconds`` | ``DISPATCHER_MAX_BATCHING_WINDOW_SECONDS`` | the dispatcher mapping's batching window: with ``SUB_SECOND`` precision, messages are sent to surface this much earlier (the lead) | ``0`` |
| ``precision`` | ``PRECISION`` | ``SUB_SECOND`` (wait out the sub-second rest) or ``SECOND`` (delay by the seconds left rounded up, deliver on arrival) | ``contract.json`` |
| ``listing`` | ``LISTING`` | ``true``: keep the listing index's keys on each record and serve ``GET /schedules`` | ``false`` |
| ``metrics_namespace`` | ``METRICS_NAMESPACE`` | CloudWatch namespace of the EMF metrics | ``contract.json`` |
| ``log_level`` | ``LOG_LEVEL`` | the runtime's log level (read by ``observability``) | ``contract.json`` |
| ``outcomes`` | ``OUTCOMES`` | JSON ``{"target": <description>, "kinds": [...]?, "includePayload": bool?}``: where each occurrence's outcome event goes (:mod:`scheduler_runtime.core.outcomes`) | none: no outcome events |

Each name is the construct prop's name in capitals (``delay_window`` -> ``DELAY_WINDOW_SECONDS``)
and the local engine's option and flag (``delay_window``, ``--delay-window``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

from ..core import contract
from ..core.flow import FlowLimits, Ticket
from ..core.outcomes import Settings as OutcomeSettings
from ..core.window import DelayRule

ENV = contract.ENV
ENV_KEYS: tuple[str, ...] = ENV.names()
"""Every variable the runtime reads: a context is built once per set of their values."""


class ConfigError(RuntimeError):
    """The function's environment is incomplete or malformed (a deployment bug)."""


@dataclass(frozen=True)
class Config:
    table_name: str
    delayer_queue_url: str = ""
    flow_queue_url: str = ""
    """Where the messages of deliveries to limited targets wait (:meth:`room_ticket`); empty: in the delayer queue."""
    dead_letter_queue_url: str = ""
    targets: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    default_target: str = contract.DEFAULT_TARGET_NAME
    shard_count: int = contract.DEFAULT_SHARD_COUNT
    delay_window_seconds: int = contract.DEFAULT_DELAY_WINDOW_SECONDS
    history_retention_seconds: int = contract.DEFAULT_HISTORY_RETENTION_SECONDS
    max_receive_count: int = contract.DEFAULT_MAX_RECEIVE_COUNT
    retry_max_age_seconds: int = contract.DEFAULT_RETRY_MAX_AGE_SECONDS
    max_lateness_seconds: int | None = None
    dispatcher_timeout_seconds: int = contract.DEFAULT_DISPATCHER_TIMEOUT_SECONDS
    dispatcher_max_batching_window_seconds: int = 0
    precision: str = contract.DEFAULT_PRECISION
    metrics_namespace: str = contract.DEFAULT_METRICS_NAMESPACE
    listing: bool = False
    outcomes: OutcomeSettings | None = None
    """Where each occurrence's outcome event goes, and which kinds; None: no outcome events (nothing is sent)."""

    @cached_property
    def flow_limits(self) -> Mapping[str, FlowLimits]:
        """The limits of each target that has them (``flowControl``); empty when none has (then nothing new is paid)."""
        limits = {name: FlowLimits.of(description) for name, description in self.targets.items()}
        return {name: value for name, value in limits.items() if value is not None}

    def room_ticket(self, target: str, group: str | None) -> Ticket | None:
        """What a message of a delivery to ``target`` (of ``group``) carries so that its first receive takes a slot at
        once, instead of first making the start write that refuses to learn the target (a write unit on the table for
        each delivery): a ticket without a slot, naming the target, and the group when its limits are per group.
        None for a target without limits, whose messages carry nothing more."""
        limits = self.flow_limits.get(target)
        if limits is None:
            return None
        return Ticket(target, None, group=group if limits.for_group(group) is not None else None)

    @property
    def visibility_timeout_seconds(self) -> int:
        """The delayer queue's visibility timeout: a failed or unfinished receive comes back after it."""
        return contract.VISIBILITY_TIMEOUT_FACTOR * self.dispatcher_timeout_seconds

    @property
    def delay_rule(self) -> DelayRule:
        """How delayer messages are delayed, and how early one may arrive and still be waited for."""
        return DelayRule.of(self.dispatcher_max_batching_window_seconds, self.precision)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Config":
        env = os.environ if env is None else env
        table_name = env.get(ENV.table_name)
        if not table_name:
            raise ConfigError(f"{ENV.table_name} is not set")
        return cls(
            table_name=table_name,
            delayer_queue_url=env.get(ENV.delayer_queue_url, ""),
            flow_queue_url=env.get(ENV.flow_queue_url, ""),
            dead_letter_queue_url=env.get(ENV.dead_letter_queue_url, ""),
            targets=_targets(env),
            shard_count=_positive_int(env, ENV.shard_count, contract.DEFAULT_SHARD_COUNT),
            delay_window_seconds=_positive_int(env, ENV.delay_window_seconds, contract.DEFAULT_DELAY_WINDOW_SECONDS),
            history_retention_seconds=_positive_int(
                env, ENV.history_retention_seconds, contract.DEFAULT_HISTORY_RETENTION_SECONDS),
            max_receive_count=_positive_int(env, ENV.max_receive_count, contract.DEFAULT_MAX_RECEIVE_COUNT),
            retry_max_age_seconds=_positive_int(env, ENV.retry_max_age_seconds, contract.DEFAULT_RETRY_MAX_AGE_SECONDS),
            max_lateness_seconds=_positive_int(env, ENV.max_lateness_seconds, 0) or None,
            dispatcher_timeout_seconds=_positive_int(
                env, ENV.dispatcher_timeout_seconds, contract.DEFAULT_DISPATCHER_TIMEOUT_SECONDS),
            dispatcher_max_batching_window_seconds=_positive_int(
                env, ENV.dispatcher_max_batching_window_seconds, 0, least=0),
            precision=_one_of(env, ENV.precision, contract.PRECISIONS, contract.DEFAULT_PRECISION),
            metrics_namespace=env.get(ENV.metrics_namespace) or contract.DEFAULT_METRICS_NAMESPACE,
            listing=_flag(env, ENV.listing),
            outcomes=_outcomes(env),
        )


def _targets(env: Mapping[str, str]) -> dict[str, Mapping[str, Any]]:
    """The target descriptions by name, each checked against the contract: a bad one is a deployment
    bug, refused here at cold start rather than at its first delivery."""
    try:
        targets = json.loads(env.get(ENV.targets) or "{}")
    except ValueError as exc:
        raise ConfigError(f"{ENV.targets} is not valid JSON: {exc}") from None
    if not isinstance(targets, dict):
        raise ConfigError(f"{ENV.targets} must be a JSON object of name -> target")
    for name, description in targets.items():
        problem = contract.target_description_problem(description)
        if problem:
            raise ConfigError(f"{ENV.targets}: target {name!r}: {problem}")
    return targets


def _outcomes(env: Mapping[str, str]) -> OutcomeSettings | None:
    raw = env.get(ENV.outcomes)
    if not raw:
        return None
    try:
        return OutcomeSettings.from_json(json.loads(raw))
    except ValueError as exc:
        raise ConfigError(f"{ENV.outcomes}: {exc}") from None


def _positive_int(env: Mapping[str, str], name: str, default: int, least: int = 1) -> int:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < least:
        raise ConfigError(f"{name} must be >= {least}, got {value}")
    return value


def _one_of(env: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    raw = (env.get(name) or default).strip().upper()
    if raw not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(allowed)}, got {raw!r}")
    return raw


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = (env.get(name) or "false").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigError(f"{name} must be true or false, got {raw!r}")
    return raw == "true"
