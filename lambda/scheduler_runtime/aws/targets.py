"""Delivery to targets. A target is a JSON description in ``TARGETS``.

- ``{"type": "lambda", "functionArn": ..., "invocationType": str?}``: a
  synchronous invoke (``RequestResponse``, the default); a function error
  counts as a failed delivery, so it is retried and, at the end, parked in the
  dead-letter queue with the error. With ``"invocationType": "Event"`` an
  asynchronous invoke: Lambda's 202 (the event accepted) is the delivery, and
  the function's own retries and on-failure destination apply from there.
- ``{"type": "sqs", "queueUrl": ..., "fifo": bool, "messageGroupId": str?}``:
  a FIFO queue gets a ``MessageGroupId`` (the configured one, else the
  schedule id) and a deduplication id derived from the ``dedupeKey``. The
  body is compact JSON that SQS accepts whatever the payload holds
  (``core.envelope.sqs_safe_json``).
- ``{"type": "sns", "topicArn": ..., "fifo": bool, "messageGroupId": str?}``:
  the same body as the message of a ``Publish``, the ``dedupeKey`` as a
  message attribute, and on a FIFO topic the same group and deduplication id
  as a FIFO queue gets.
- ``{"type": "eventbridge", "eventBusArn": ..., "detailType": ..., "source": ...}``:
  one ``PutEvents`` entry, the same body as its ``Detail``. A response with a
  failed entry is a failed delivery, with the entry's ``ErrorCode`` as the reason.
- ``{"type": "stepfunctions", "stateMachineArn": ...}``: a ``StartExecution``
  with the same body as its input, named after the ``dedupeKey``
  (:func:`execution_name`): a STANDARD workflow refuses a second start of the
  same name (``ExecutionAlreadyExists``), which counts as delivered.
- ``{"type": "https", "url": ..., "secretArn": ..., "timeoutSeconds": n, "headers": {...}?}``: a
  signed ``POST`` of the same body as compact JSON, on kept-alive connections
  (:mod:`.https_target`): 2xx is delivered; 408, 429, 5xx, a timeout or no
  connection is retried; any other status (redirects are not followed) parks
  the envelope at once, with the status as the reason.

A delivery answers a short summary of what the target answered (:func:`~..core.outcomes.answer_summary`),
which a ``DELIVERED`` outcome event carries: a Lambda function's status and the start of its result, the
message id of a send or a publish, the event id of an entry, the execution's ARN, an endpoint's status and the
start of its body.

What a target refuses for good raises :class:`Undeliverable`, which the
dispatcher parks at once instead of retrying: for SQS an envelope larger than
the queue's maximum message size (which only SQS knows: 1 KiB to 1 MiB per
queue); for SNS, EventBridge and Step Functions also a denied permission or a
topic, bus or state machine that does not exist (:data:`SNS_PARKED_AT_ONCE`,
:data:`EVENTBRIDGE_PARKED_AT_ONCE`, :data:`STEPFUNCTIONS_PARKED_AT_ONCE`).
Every other failure (throttling, an internal error, a 5xx, no connection) is
retried through the delayer queue.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Callable, Mapping

from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError

from ..core.contract import TARGET_TYPES
from ..core.envelope import sqs_safe_json
from ..core.outcomes import answer_summary
from .https_target import deliver_https
from .target_errors import DeliveryError as DeliveryError, Throttled as Throttled  # re-exported
from .target_errors import Undeliverable as Undeliverable

Answer = dict[str, Any]
"""A short summary of a target's answer to a delivery."""
Deliverer = Callable[[Any, Mapping[str, Any], dict[str, Any]], Answer]
_UNREACHED_PAUSES = (0.1, 0.4)
"""Pauses before trying again an invoke that never reached the function (three tries in all)."""
_THROTTLED = {"TooManyRequestsException", "ThrottlingException", "EC2ThrottledException"}
THROTTLE_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException", "TooManyRequestsException",
    "RequestThrottled", "RequestLimitExceeded", "SlowDown", "EC2ThrottledException",  # botocore's throttling codes
    "Throttled", "KMSThrottling", "KmsThrottlingException", "KmsThrottled",  # SNS, Step Functions, SQS with KMS
    "ExecutionLimitExceeded",  # Step Functions: too many open executions
})
"""Error codes that say slow down: the delivery raises :class:`Throttled` (held back, the attempt not spent, on a
target with flow control; retried as any failure on one without)."""


_REFUSED_FOR_GOOD = {"InvalidParameterValue", "InvalidParameterValueException", "InvalidMessageContents",
                     "RequestTooLargeException"}
"""Error codes of a send or invoke that no retry of the same envelope can change (a sender fault)."""


SNS_PARKED_AT_ONCE = frozenset({
    "AuthorizationError", "InvalidSecurity", "KMSAccessDenied",  # permission
    "NotFound", "KMSNotFound",  # a topic (or its key) that does not exist
    "InvalidParameter", "ParameterValueInvalid", "ValidationException",  # e.g. a message too long for the topic
})
"""Error codes of an SNS ``Publish`` (the API reference's list) that park the envelope at once. Every
other one is retried: ``Throttled``, ``KMSThrottling``, ``InternalError``, a key disabled or pending
(``KMSDisabled``, ``KMSInvalidState``, ``KMSOptInRequired``), whatever code is new."""
EVENTBRIDGE_PARKED_AT_ONCE = frozenset({
    "AccessDeniedException", "NotAuthorizedForSourceException", "NotAuthorizedForDetailTypeException",  # permission
    "ResourceNotFoundException", "NotFoundException",  # a bus that does not exist
    "InvalidArgument", "MalformedDetail", "InvalidAccountIdException", "ValidationException",  # invalid parameter
})
"""Error codes of a ``PutEvents`` request, or of its entry, that park the envelope at once (the entry's
non-retryable codes in the API reference, ``PutEventsResultEntry``, less ``RedactionFailure``, an
internal failure). Every other one is retried: ``ThrottlingException``, ``InternalFailure``,
``InternalException``, whatever code is new."""


STEPFUNCTIONS_PARKED_AT_ONCE = frozenset({
    "AccessDeniedException", "KmsAccessDeniedException",  # permission
    "StateMachineDoesNotExist", "StateMachineDeleting",  # a state machine that does not exist (or soon not)
    "InvalidArn", "InvalidName", "InvalidExecutionInput", "ValidationException",  # e.g. an input over 256 KiB
})
"""Error codes of a ``StartExecution`` (the API reference's list) that park the envelope at once. Every
other one is retried: ``ExecutionLimitExceeded``, ``KmsThrottlingException``, a key disabled or pending
(``KmsInvalidStateException``), ``ThrottlingException``, a 5xx, whatever code is new.
``ExecutionAlreadyExists`` is a delivery (see :func:`execution_name`)."""


def refused_for_good(exc: Exception) -> bool:
    """Whether ``exc`` says the service will never take this request as it is (e.g. a message too long)."""
    return _error_code(exc) in _REFUSED_FOR_GOOD


def _error_code(exc: Exception) -> str | None:
    return exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else None


def _park_if_refused(code: str | None, message: str, codes: frozenset[str], where: str) -> None:
    """Raise :class:`Undeliverable` when ``where`` failed the delivery with an error ``code`` in ``codes``;
    else return, and the caller raises the failure as it is (retried)."""
    if code in codes:
        raise Undeliverable(f"{where} refuses the envelope for good: {code}: {message}")


def _client_error_message(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Message", exc))


LAMBDA_INVOCATION_TYPES = TARGET_TYPES["lambda"].values["invocationType"]
"""The ``invocationType`` values of a Lambda target (Lambda's ``Invoke`` names, from the contract); the first is
the default."""


def _invoke_lambda(ctx: Any, target: Mapping[str, Any], envelope: dict[str, Any]) -> Answer:
    """An invoke, made once per delivery attempt: synchronous, or with ``invocationType`` ``Event``
    asynchronous, delivered when Lambda answers 202 (the event is queued for the function).

    The Lambda client makes no retries of its own (``context.client_config``): an invoke that timed out
    or lost its answer may have run the function, and is retried only as the next delivery attempt.
    An invoke that never reached the function (throttled, or no connection) is tried again at once.
    """
    invocation_type = target.get("invocationType", LAMBDA_INVOCATION_TYPES[0])  # one of them: checked at start
    payload = json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    for pause in (*_UNREACHED_PAUSES, None):
        try:
            response = ctx.client("lambda").invoke(FunctionName=target["functionArn"],
                                                   InvocationType=invocation_type, Payload=payload)
            break
        except (ClientError, EndpointConnectionError, ConnectTimeoutError) as exc:
            if pause is None or not _never_reached(exc):
                raise
            ctx.clock.sleep(pause)
    # Read to the end even when unused: an unread body keeps the connection out of the pool,
    # and the next invoke would open (on AWS: handshake) a new one.
    answer = response["Payload"].read()
    if invocation_type == "Event":
        if response.get("StatusCode") != 202:
            raise DeliveryError(f"lambda {target['functionArn']} did not accept the event: status "
                                f"{response.get('StatusCode')}")
        return answer_summary(statusCode=response.get("StatusCode"))
    if response.get("FunctionError"):
        detail = answer.decode("utf-8", "replace")[:500]
        raise DeliveryError(f"lambda {target['functionArn']} failed: {response['FunctionError']}: {detail}")
    return answer_summary(statusCode=response.get("StatusCode"), result=answer.decode("utf-8", "replace"))


def _never_reached(exc: Exception) -> bool:
    """Whether a failed invoke certainly never ran the function: throttled, or never connected."""
    return _error_code(exc) in _THROTTLED if isinstance(exc, ClientError) else True


def _send_sqs(ctx: Any, target: Mapping[str, Any], envelope: dict[str, Any]) -> Answer:
    body = sqs_safe_json(envelope)
    try:
        response = ctx.client("sqs").send_message(QueueUrl=target["queueUrl"], MessageBody=body,
                                       **_message_fields(target, envelope))
    except ClientError as exc:
        if refused_for_good(exc):
            raise Undeliverable(f"queue {target['queueUrl']} refuses the envelope ({len(body.encode('utf-8'))} bytes) "
                                f"for good: {_client_error_message(exc)}") from exc
        raise
    return answer_summary(messageId=response.get("MessageId"))


def _publish_sns(ctx: Any, target: Mapping[str, Any], envelope: dict[str, Any]) -> Answer:
    message = sqs_safe_json(envelope)  # SNS fans out to SQS queues: the body they accept
    try:
        response = ctx.client("sns").publish(TopicArn=target["topicArn"], Message=message, **_message_fields(target, envelope))
    except ClientError as exc:
        where = f"topic {target['topicArn']}"
        _park_if_refused(_error_code(exc), _client_error_message(exc), SNS_PARKED_AT_ONCE, where)
        raise
    return answer_summary(messageId=response.get("MessageId"))


def _put_event(ctx: Any, target: Mapping[str, Any], envelope: dict[str, Any]) -> Answer:
    bus = target["eventBusArn"]
    entry = {"EventBusName": bus, "Source": target["source"], "DetailType": target["detailType"],
             "Detail": sqs_safe_json(envelope)}
    try:
        response = ctx.client("events").put_events(Entries=[entry])
    except ClientError as exc:
        _park_if_refused(_error_code(exc), _client_error_message(exc), EVENTBRIDGE_PARKED_AT_ONCE, f"event bus {bus}")
        raise
    if not response.get("FailedEntryCount"):
        return answer_summary(eventId=(response.get("Entries") or [{}])[0].get("EventId"))
    [failed] = response["Entries"]
    code, message = failed.get("ErrorCode"), failed.get("ErrorMessage", "")
    _park_if_refused(code, message, EVENTBRIDGE_PARKED_AT_ONCE, f"event bus {bus}")
    failure = Throttled if code in THROTTLE_CODES else DeliveryError
    raise failure(f"event bus {bus} failed the entry: {code}: {message}")


def _start_execution(ctx: Any, target: Mapping[str, Any], envelope: dict[str, Any]) -> Answer:
    machine = target["stateMachineArn"]
    try:
        response = ctx.client("stepfunctions").start_execution(stateMachineArn=machine, name=execution_name(envelope["dedupeKey"]),
                                                    input=sqs_safe_json(envelope))
    except ClientError as exc:
        code = _error_code(exc)
        if code == "ExecutionAlreadyExists":
            # this occurrence's execution was started by an earlier attempt (its input: that attempt's)
            return answer_summary(error=code)
        _park_if_refused(code, _client_error_message(exc), STEPFUNCTIONS_PARKED_AT_ONCE, f"state machine {machine}")
        raise
    return answer_summary(executionArn=response.get("executionArn"))


# StartExecution's name (API reference, StartExecution, "name"): 1-80 characters, unique per state machine
# for 90 days after the execution closes on a STANDARD workflow, and without white space, brackets,
# wildcards, " # % \ ^ | ~ ` $ & , ; : / or control characters; "to enable logging with CloudWatch Logs,
# the name should only contain 0-9, A-Z, a-z, - and _".
# https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html
EXECUTION_NAME_MAX_LENGTH = 80
_EXECUTION_NAME_DIGEST_LENGTH = 40  # 160 bits of SHA-256
_NOT_IN_EXECUTION_NAME = re.compile(r"[^0-9A-Za-z_-]")


def execution_name(dedupe_key: str) -> str:
    """The execution's name for one occurrence: the ``dedupeKey`` made readable (characters outside
    ``0-9A-Za-z_-`` as ``-``, at most 39 of them) and 40 hex digits of its SHA-256, so every occurrence
    has its own name and every attempt of one occurrence the same."""
    room = EXECUTION_NAME_MAX_LENGTH - _EXECUTION_NAME_DIGEST_LENGTH - 1
    readable = _NOT_IN_EXECUTION_NAME.sub("-", dedupe_key)[:room]
    return f"{readable}-{fifo_deduplication_id(dedupe_key)[:_EXECUTION_NAME_DIGEST_LENGTH]}"


def _message_fields(target: Mapping[str, Any], envelope: dict[str, Any]) -> dict[str, Any]:
    """What an SQS send and an SNS publish carry beside the body: the ``dedupeKey`` as a message
    attribute, and for a FIFO queue or topic the message group (the configured one, else the schedule
    id) and a deduplication id derived from the ``dedupeKey``."""
    fields: dict[str, Any] = {
        "MessageAttributes": {"dedupeKey": {"DataType": "String", "StringValue": envelope["dedupeKey"]}}}
    if target.get("fifo"):
        fields["MessageGroupId"] = target.get("messageGroupId") or envelope["id"]
        fields["MessageDeduplicationId"] = fifo_deduplication_id(envelope["dedupeKey"])
    return fields


def fifo_deduplication_id(dedupe_key: str) -> str:
    """SQS allows 128 characters here; a SHA-256 hex digest is 64 and stable."""
    return hashlib.sha256(dedupe_key.encode("utf-8")).hexdigest()


DELIVERERS: dict[str, Deliverer] = {"lambda": _invoke_lambda, "sqs": _send_sqs, "sns": _publish_sns,
                                    "eventbridge": _put_event, "stepfunctions": _start_execution,
                                    "https": deliver_https}


def deliver(ctx: Any, target: Mapping[str, Any], envelope: dict[str, Any]) -> Answer:
    """Deliver ``envelope`` to ``target``: what it answered, in short; raise :class:`DeliveryError` when it fails."""
    deliverer = DELIVERERS.get(str(target.get("type")))
    if deliverer is None:
        raise DeliveryError(f"target type {target.get('type')!r} is not supported")
    try:
        return deliverer(ctx, target, envelope)
    except DeliveryError:
        raise
    except ClientError as exc:
        if _error_code(exc) in THROTTLE_CODES:
            raise Throttled(f"{type(exc).__name__}: {exc}") from exc
        raise DeliveryError(f"{type(exc).__name__}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - every failure is a failed delivery with its reason
        raise DeliveryError(f"{type(exc).__name__}: {exc}") from exc
