"""Who may do what: the ``grant_*`` methods of ``DelayedScheduler``, and each runtime function's own
least-privilege policy."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Optional, Sequence

import jsii

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IValidation

from . import _nag, _wiring
from ._contract import contract
from .api import READ_ROUTES, ROUTES

if TYPE_CHECKING:
    from ._scheduler_apis import BuiltApi

_KEY_USER = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey")
_OPERATE_ROUTES = tuple(route for route in ROUTES if route.path.startswith("/targets/"))
"""The routes ``grant_operate`` grants: ``GET`` and ``PATCH /targets/{name}``."""


class SchedulerGrants:
    """``grant_*`` methods; the class that mixes this in has the table, the queues, the functions,
    the API its ``SchedulerApi`` built and the listing index's name."""

    table: dynamodb.Table
    delayer_queue: sqs.Queue
    dead_letter_queue: sqs.Queue
    api_function: lambda_.Function
    sweeper_function: lambda_.Function
    enqueuer_function: lambda_.Function
    dispatcher_function: lambda_.Function
    encryption_key: Optional[kms.IKey]
    listing_index_name: Optional[str]
    group_index_name: str
    _built_api: Optional["BuiltApi"]

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to invoke the api function directly: ``lambda:InvokeFunction`` on exactly
        ``api_function`` (no versions or aliases). The event is ``{"method", "path", "body"}``, the
        answer ``{"statusCode", "body"}`` (see the class description). A direct invoke reaches every
        route: there is no read-only invoke.

        :param grantee: e.g. the producer's role or function.
        """
        return iam.Grant.add_to_principal(grantee=grantee, actions=["lambda:InvokeFunction"],
                                          resource_arns=[self.api_function.function_arn])

    def grant_schedule(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to schedule: ``execute-api:Invoke`` on each route of this API's stage (HTTP
        or REST): ``POST /schedules``, ``GET``/``PATCH``/``DELETE /schedules/*``, ``POST /schedule-batches``,
        ``GET /schedules`` (the listing), ``PUT``/``GET``/``PATCH``/``DELETE /periodic/*``, ``GET /periodic``,
        ``DELETE /groups/*`` and ``GET``/``PATCH /targets/*`` (a target's state, its pause and resume);
        and ``grant_invoke``; nothing else. With ``SchedulerApi.none()``, ``grant_invoke`` only.

        The routes' part is meaningful with IAM authorization (the default). The ``*`` in the
        ``/schedules/*`` and ``/periodic/*`` resources stands for the ``{id}`` path parameter (in ``/groups/*``
        for ``{group}``, in ``/targets/*`` for ``{name}``); when ``grantee`` is a construct in this stack, that
        cdk-nag finding (AwsSolutions-IAM5) is acknowledged on it with this reason.

        :param grantee: e.g. the producer's role or function.
        """
        grant = self.grant_invoke(grantee)
        routes = self._grant_routes(grantee, ROUTES, "grant_schedule")
        return grant.combine(routes) if routes else grant

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to read, and only read: ``execute-api:Invoke`` on the ``GET`` routes of this
        API's stage (``GET /schedules/*``, ``GET /schedules``, ``GET /periodic/*``, ``GET /periodic``,
        ``GET /targets/*``), e.g. for a dashboard or an operator's tool. No direct invoke: that reaches every route.

        As with ``grant_schedule``, the ``*`` is the ``{id}`` (or ``{name}``) path parameter (acknowledged for
        cdk-nag on a grantee in this stack), and the grant is meaningful with IAM authorization. With
        ``SchedulerApi.none()`` it raises ``ValueError``: without an API there is no read-only way in.

        :param grantee: e.g. an operator's role.
        """
        return self._grant_api_routes(grantee, READ_ROUTES, "grant_read")

    def grant_operate(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to operate the targets, and only that: ``execute-api:Invoke`` on ``GET /targets/*``
        (a target's state, limits and counts) and ``PATCH /targets/*`` (pause and resume a target with
        ``flow_control``) of this API's stage, e.g. for an on-call operator's role that stops deliveries to a
        struggling downstream and lets them through again. It reaches no schedule: no create, read or cancel.

        As with ``grant_schedule``, the ``*`` is the ``{name}`` path parameter (acknowledged for cdk-nag on a
        grantee in this stack), and the grant is meaningful with IAM authorization. With
        ``SchedulerApi.none()`` it raises ``ValueError``: a direct invoke reaches every route.

        :param grantee: e.g. an operator's role.
        """
        return self._grant_api_routes(grantee, _OPERATE_ROUTES, "grant_operate")

    def _grant_api_routes(self, grantee: iam.IGrantable, routes: Sequence[contract.Route], name: str) -> iam.Grant:
        """``execute-api:Invoke`` on ``routes``; refused (``ValueError`` naming ``name``) without an API, since a
        direct invoke, the only other way in, reaches every route."""
        grant = self._grant_routes(grantee, routes, name)
        if grant is None:
            raise ValueError(f"{name}: this scheduler has no API (SchedulerApi.none()), and a direct invoke "
                             "reaches every route; use grant_invoke, or an API")
        return grant

    def grant_redrive(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to run the operator's redrive (``cdk-delayed-scheduler redrive``,
        ``cdk_delayed_scheduler.operator.redrive``), and nothing else: ``sqs:ReceiveMessage``,
        ``sqs:DeleteMessage`` and ``sqs:ChangeMessageVisibility`` on ``dead_letter_queue`` (take a parked
        message, delete it once sent back, release what the run left); ``sqs:SendMessage`` on ``delayer_queue``
        (a re-armed schedule, a cancelled group's sweep); ``sqs:GetQueueUrl`` on both (the queues named by their
        names); ``dynamodb:GetItem`` and ``dynamodb:UpdateItem`` on ``table`` (a schedule's record read and
        re-armed); ``lambda:InvokeFunction`` on exactly ``enqueuer_function`` (stream recovery); and, with
        ``encryption_key``, ``kms:Decrypt``, ``kms:Encrypt`` and ``kms:GenerateDataKey`` on that key, which
        encrypts the table and the queues. Every resource is named exactly: no wildcard, so nothing for
        cdk-nag to acknowledge.

        :param grantee: e.g. an operator's role.
        """
        dead_letters, delayer = self.dead_letter_queue.queue_arn, self.delayer_queue.queue_arn
        grants = [
            iam.Grant.add_to_principal(grantee=grantee, actions=[
                "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl"],
                resource_arns=[dead_letters]),
            iam.Grant.add_to_principal(grantee=grantee, actions=["sqs:SendMessage", "sqs:GetQueueUrl"],
                                       resource_arns=[delayer]),
            iam.Grant.add_to_principal(grantee=grantee, actions=["dynamodb:GetItem", "dynamodb:UpdateItem"],
                                       resource_arns=[self.table.table_arn]),
            iam.Grant.add_to_principal(grantee=grantee, actions=["lambda:InvokeFunction"],
                                       resource_arns=[self.enqueuer_function.function_arn]),
        ]
        if self.encryption_key is not None:
            grants.append(self.encryption_key.grant(grantee, *_KEY_USER))
        return functools.reduce(iam.Grant.combine, grants)

    # --- internals -------------------------------------------------------------------------
    def _grant_routes(self, grantee: iam.IGrantable, routes: Sequence[contract.Route],
                      method: str) -> Optional[iam.Grant]:
        """``execute-api:Invoke`` on ``routes`` of this API's stage; ``None`` without an API."""
        if self._built_api is None:
            return None
        arns = [self._built_api.route_arns[(route.method, route.path)] for route in routes]
        grant = iam.Grant.add_to_principal(grantee=grantee, actions=["execute-api:Invoke"], resource_arns=arns)
        _acknowledge_route_wildcards(Stack.of(self.table), grantee, arns, method)
        return grant

    def _grant_runtime(self) -> None:
        """Least privilege, per function: exactly the table operations and sends its handler makes, on
        the table itself (``Table.grant`` would add ``<table>/index/*`` to each once the table has an
        index) and, with listing, ``Query`` on the listing index alone."""
        indexes = [self.group_index_name] + ([self.listing_index_name] if self.listing_index_name else [])
        self._grant_table(self.api_function, "dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem",
                          "dynamodb:DeleteItem", "dynamodb:Query",  # Query: GET /periodic reads shard partitions
                          "dynamodb:BatchGetItem")  # a listing page's records
        # Query: a group's members (its cancel counts them, GET ?group= lists them); with listing, the listing page
        self._grant_index_query(self.api_function, *indexes)
        # UpdateItem: raising the shard high-water mark, so timers of a larger shard_count are still swept
        self._grant_table(self.sweeper_function, "dynamodb:Query", "dynamodb:DeleteItem", "dynamodb:UpdateItem")
        self._grant_table(self.enqueuer_function, "dynamodb:BatchWriteItem")  # write-back of refused timers
        # UpdateItem: a delivery's start and end; GetItem and PutItem: a periodic definition's next timer;
        # DeleteItem: a cancelled group's sweep removes its members' timers, as DELETE does
        self._grant_table(self.dispatcher_function, "dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:PutItem",
                          "dynamodb:DeleteItem")
        self._grant_index_query(self.dispatcher_function, self.group_index_name)  # a cancelled group's sweep
        self._grant_delayer_sends(self.delayer_queue)
        self._grant_send(self.dispatcher_function, self.dead_letter_queue)  # park an exhausted delivery

    def _grant_delayer_sends(self, queue: sqs.Queue) -> None:
        """``sqs:SendMessage`` on a queue the dispatcher reads (the delayer queue; the flow queue, where the same
        messages of a limited target's deliveries go) to each function that sends to it: the api function (short
        timers go straight to the queue), the enqueuer (claimed timers) and the dispatcher (a message put back:
        early, or waiting for room). The dispatcher's consumer actions come with its event source mapping."""
        for function in (self.api_function, self.enqueuer_function, self.dispatcher_function):
            self._grant_send(function, queue)

    def _grant_table(self, function: lambda_.Function, *actions: str) -> None:
        iam.Grant.add_to_principal(grantee=function, actions=list(actions), resource_arns=[self.table.table_arn])
        _wiring.grant_key(self.encryption_key, function, *_KEY_USER)

    def _grant_index_query(self, function: lambda_.Function, *index_names: str) -> None:
        iam.Grant.add_to_principal(grantee=function, actions=["dynamodb:Query"],
                                   resource_arns=[f"{self.table.table_arn}/index/{name}" for name in index_names])

    def _grant_send(self, function: lambda_.Function, queue: sqs.Queue) -> None:
        _wiring.grant_send(queue, function)


def _acknowledge_route_wildcards(stack: Stack, grantee: iam.IGrantable, route_arns: Sequence[str], method: str) -> None:
    """The ``/<collection>/*`` resources ``method`` (``grant_schedule``, ``grant_read``, ``grant_operate``) granted:
    each ``*`` is the path parameter (``{id}``, ``{group}``, ``{name}``) of one route.

    The finding names the ARN as it stands in the grantee's policy (concrete region and account in a
    stack with an explicit environment, ``<AWS::Region>``/``<AWS::AccountId>`` otherwise), so the
    acknowledgement is rendered from the same ARN. For a grantee in another stack than the
    scheduler's, the API's id reaches that policy as an import of an export that CDK names only at
    synthesis, once it has resolved the cross-stack references: the acknowledgement is then made by a
    check of the grantee's that runs after that (``_AcknowledgeOnceResolved``), before cdk-nag 3 (a
    validation plugin) reads it. (cdk-nag 2, an Aspect, runs before; docs/design.md, "cdk-nag".)
    """
    if not isinstance(grantee, Construct):
        return
    if Stack.of(grantee) is stack:
        _acknowledge_routes(grantee, route_arns, method)
    else:
        grantee.node.add_validation(_AcknowledgeOnceResolved(grantee, route_arns, method))


@jsii.implements(IValidation)
class _AcknowledgeOnceResolved:
    """Acknowledges a cross-stack grant's route wildcards when the construct tree is validated: after
    CDK resolved the cross-stack references (so the import's name is known), before validation plugins run."""

    def __init__(self, grantee: Construct, route_arns: Sequence[str], method: str) -> None:
        self._grantee, self._route_arns, self._method = grantee, route_arns, method
        self._done = False

    def validate(self) -> list[str]:
        if not self._done:  # once, though an app may be synthesized more than once
            self._done = True
            _acknowledge_routes(self._grantee, self._route_arns, self._method)
        return []


def _acknowledge_routes(grantee: Construct, route_arns: Sequence[str], method: str) -> None:
    stack = Stack.of(grantee)
    for arn in route_arns:
        resource = _nag.flatten_reference(stack.resolve(arn))
        if resource.endswith("/*"):
            verb, collection = resource.rsplit("/", 3)[-3:-1]
            parameter = next(r.path.rsplit("/", 1)[1] for r in ROUTES
                             if r.method == verb and r.path.startswith(f"/{collection}/{{"))
            _nag.acknowledge(
                grantee,
                f"AwsSolutions-IAM5[Resource::{resource}]",
                f"{method}: the * is the {parameter} path parameter of {verb} /{collection}/{parameter} on this "
                "scheduler's own API and stage; no other route or API is granted.",
            )
