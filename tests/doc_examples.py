"""The README's and the docs' Python examples as modules a type checker can read.

Each ```` ```python ```` block of README.md and docs/*.md becomes a module of its own, as written. A
block that is a fragment of a larger program (``timers.add_target(...)`` in a stack, a handler's
``settle_order(...)``) uses names the page around it gives; those come first, from :data:`CONTEXT`,
each as an import or a typed declaration, for exactly the names the block uses without binding.
A name that is neither bound by the block nor in :data:`CONTEXT` is reported, so a new example's
context is said here once, with its type. docs/examples/ (the testing kit's sample app) is copied
beside them, as its test imports it.
"""

from __future__ import annotations

import ast
import builtins
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
EXAMPLES = ROOT / "docs" / "examples"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

_STACK = {
    "self": "from aws_cdk import Stack\nself: Stack",
    "Duration": "from aws_cdk import Duration",
    "DelayedScheduler": "from cdk_delayed_scheduler import DelayedScheduler",
    "targets": "from cdk_delayed_scheduler import targets",
    "callback_fn": "from aws_cdk import aws_lambda as lambda_\ncallback_fn: lambda_.IFunction",
    "app_role": "from aws_cdk import aws_iam as iam\napp_role: iam.IRole",
    "timers": "from cdk_delayed_scheduler import DelayedScheduler\ntimers: DelayedScheduler",
}
_CLIENT = {
    "os": "import os",
    "SchedulerClient": "from cdk_delayed_scheduler.client import SchedulerClient",
    "api_url": "api_url: str",
    "tokens": "from typing import Any\ntokens: Any  # the application's identity provider's session",
    "timers": "from cdk_delayed_scheduler.client import SchedulerClient\ntimers: SchedulerClient",
    "order_timer_id": "order_timer_id: str",
    "log": "import logging\nlog: logging.Logger",
}
_CONSUMER = {
    "log": "import logging\nlog: logging.Logger",
    "settle_order": "from typing import Callable\nsettle_order: Callable[[int], None]",
    "already_done": "from typing import Callable\nalready_done: Callable[[str], bool]",
}
CONTEXT: dict[str, dict[str, str]] = {
    "README.md": {"timers": _CLIENT["timers"]},
    "pypi.md": {**_STACK, "deliveries_queue": "from aws_cdk import aws_sqs as sqs\ndeliveries_queue: sqs.IQueue"},
    "api.md": {**_STACK, "timers_function": "timers_function: str"},
    "client.md": _CLIENT,
    "construct.md": {**_STACK, "secretsmanager": "from aws_cdk import aws_secretsmanager as secretsmanager",
                     # cdk-nag 2's API (this environment has cdk-nag 3, which has none of it): not checked
                     **{name: f"from typing import Any\n{name}: Any"
                        for name in ("NagSuppressions", "NagPackSuppression", "RegexAppliesTo")}},
    "consuming.md": {**_STACK, **_CONSUMER,
                     "dynamodb": "from aws_cdk import aws_dynamodb as dynamodb",
                     "lambda_": "from aws_cdk import aws_lambda as lambda_",
                     "lambda_event_sources": "from aws_cdk import aws_lambda_event_sources as lambda_event_sources",
                     "sqs": "from aws_cdk import aws_sqs as sqs",
                     "sns": "from aws_cdk import aws_sns as sns",
                     "subscriptions": "from aws_cdk import aws_sns_subscriptions as subscriptions",
                     "events": "from aws_cdk import aws_events as events",
                     "events_targets": "from aws_cdk import aws_events_targets as events_targets",
                     "sfn": "from aws_cdk import aws_stepfunctions as sfn",
                     "deliveries_dlq": "from aws_cdk import aws_sqs as sqs\ndeliveries_dlq: sqs.IQueue",
                     "inbox": "from aws_cdk import aws_sqs as sqs\ninbox: sqs.IQueue",
                     "consumer": "from aws_cdk import aws_lambda as lambda_\nconsumer: lambda_.Function",
                     "notifier_fn": "from aws_cdk import aws_lambda as lambda_\nnotifier_fn: lambda_.IFunction",
                     "handler_fn": "from aws_cdk import aws_lambda as lambda_\nhandler_fn: lambda_.IFunction",
                     "chain": "from aws_cdk import aws_stepfunctions as sfn\nchain: sfn.IChainable"},
    "testing.md": {"billing_handler": "from typing import Any\ndef billing_handler(envelope: dict[str, Any], "
                                      "context: object) -> None: ..."},
}
#: What the examples use of FastAPI (not a dependency of this project), typed as FastAPI types it.
FASTAPI_STUB = """\
from contextlib import AbstractAsyncContextManager
from typing import Any, Callable, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

class FastAPI:
    def __init__(self, *, lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]] | None = None) -> None: ...
    def post(self, path: str) -> Callable[[_F], _F]: ...
    def delete(self, path: str) -> Callable[[_F], _F]: ...
"""


@dataclass(frozen=True)
class Example:
    document: Path
    line: int
    code: str

    @property
    def module(self) -> str:
        return f"{self.document.stem.lower()}_line_{self.line}"


def examples() -> list[Example]:
    """Every Python block of the README and the docs, with the line its code starts at."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for block in _BLOCK.finditer(text):
            found.append(Example(document, text.count("\n", 0, block.start(1)) + 1, block.group(1)))
    return found


def unbound_names(code: str) -> set[str]:
    """The names ``code`` reads but never binds (scopes aside: a name bound anywhere counts as bound)."""
    read, bound = set(), set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
    return read - bound - set(dir(builtins))


def write_modules(folder: Path) -> tuple[dict[str, tuple[Example, int]], list[str]]:
    """Each example as a module in ``folder`` (its context first), with docs/examples/ and the FastAPI stub
    beside them. Answers each example's module file name with the example and the lines its context took,
    and each name an example uses that neither it nor its context gives."""
    written, unknown = {}, []
    for example in examples():
        context = CONTEXT.get(example.document.name, {})
        names = sorted(unbound_names(example.code))
        unknown += [f"{example.document.name}:{example.line}: {name}" for name in names if name not in context]
        prelude = "".join(f"{context[name]}\n" for name in names if name in context)
        (folder / f"{example.module}.py").write_text(prelude + example.code, encoding="utf-8")
        written[f"{example.module}.py"] = (example, prelude.count("\n"))
    for sample in sorted(EXAMPLES.glob("*.py")):
        shutil.copy(sample, folder / sample.name)
    (folder / "fastapi.pyi").write_text(FASTAPI_STUB, encoding="utf-8")
    return written, unknown


def located(report: str, written: dict[str, tuple[Example, int]]) -> str:
    """A type checker's ``module.py:line:`` references as ``document:line`` of the example's own code."""
    def place(found: re.Match[str]) -> str:
        if found.group(1) not in written:
            return found.group(0)
        example, prelude = written[found.group(1)]
        line = int(found.group(2)) - prelude
        return (f"{example.document.relative_to(ROOT)}:{example.line + line - 1}:" if line > 0
                else f"{example.document.relative_to(ROOT)}:{example.line} (its context):")
    return re.sub(r"^([\w.]+\.py):(\d+):", place, report, flags=re.M)
