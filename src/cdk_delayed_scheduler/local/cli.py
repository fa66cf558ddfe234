"""``cdk-delayed-scheduler``: run the scheduler locally (``local``), watch it work (``demo``),
re-enqueue a stream range the enqueuer's mapping gave up on (``recover-stream``), send what the
dead-letter queue holds back for delivery (``redrive``), or prove a deployed scheduler (``check``)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from .._contract import contract
from .engine_options import LOG_LEVELS, EngineOptions
from .flow_control import add_flow_control_flags, flow_control_from_flags
from .outcome_target import add_outcome_flags, outcomes_from_flags

if TYPE_CHECKING:  # pragma: no cover
    from .deliveries import HttpsTarget, LambdaTarget
    from .engine import Engine


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _seconds_in(low: int, high: int) -> Callable[[str], int]:
    """An argument type: whole seconds from ``low`` to ``high``."""

    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {low}-{high} seconds, got {value}")
        return value

    return parse


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0-65535, got {value}")
    return value


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("cdk-delayed-scheduler")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cdk-delayed-scheduler",
        description="Run the delayed scheduler on this machine (local), or watch it work (demo).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    local = commands.add_parser("local", help="run the whole scheduler on this machine (moto on 127.0.0.1)")
    local.add_argument("--port", type=_port, default=8787, help="HTTP API port on 127.0.0.1 (default 8787; 0 = any free)")
    where = local.add_mutually_exclusive_group()
    where.add_argument("--target-url", help="POST each delivery envelope as JSON to this URL")
    where.add_argument("--target-handler", metavar="MODULE:FUNCTION", help="call this Lambda-style handler in-process")
    _add_engine_options(local)
    local.add_argument("--targets", type=Path, metavar="FILE",
                       help="named targets beside the default one: a JSON object of name -> description as the "
                            "construct renders it (type sqs, sns, eventbridge, stepfunctions or https, which the "
                            "engine creates, or lambda with a handler module:function), each with its flowControl "
                            "limits if it has any")
    add_flow_control_flags(local)
    add_outcome_flags(local)
    local.add_argument("--endpoint-url", help="use this running AWS-compatible endpoint instead of starting moto")
    local.add_argument("--state-dir", type=Path, help="persist stream checkpoints here, to resume after a restart")
    local.add_argument("--dispatcher-timeout", type=_positive_float, default=EngineOptions.dispatcher_timeout,
                       metavar="SECONDS",
                       help="the dispatcher's timeout (the construct's dispatcher_timeout); the delayer queue's "
                            f"visibility timeout is {contract.VISIBILITY_TIMEOUT_FACTOR} times it: a delivery under way "
                            "when the engine dies is received again after that "
                            f"(default {EngineOptions.dispatcher_timeout:g})")
    size, window = contract.DISPATCHER_BATCH_SIZE, contract.DISPATCHER_MAX_BATCHING_WINDOW_SECONDS
    local.add_argument("--dispatcher-batch-size", type=_positive_int, metavar="N",
                       default=EngineOptions.dispatcher_batch_size,
                       help="delayer messages per dispatcher invocation (the construct's dispatcher_batch_size, "
                            f"{size.min}-{size.max}; "
                            f"above {contract.DISPATCHER_BATCH_SIZE_WITHOUT_WINDOW} needs a batching window; "
                            f"default {EngineOptions.dispatcher_batch_size})")
    local.add_argument("--dispatcher-max-batching-window", type=_seconds_in(window.min, window.max), metavar="SECONDS",
                       default=EngineOptions.dispatcher_max_batching_window,
                       help="how long the delayer queue's poller gathers a batch (the construct's "
                            "dispatcher_max_batching_window); with SUB_SECOND precision messages surface this "
                            "much earlier, never delivered early (default 0)")
    local.add_argument("--precision", type=str.upper, choices=contract.PRECISIONS, default=contract.DEFAULT_PRECISION,
                       help="SUB_SECOND waits out the sub-second rest of a delay; SECOND delivers on arrival, up "
                            f"to about a second late (the construct's precision; default {contract.DEFAULT_PRECISION})")
    age = contract.RETRY_MAX_AGE_SECONDS
    local.add_argument("--retry-max-age", type=_seconds_in(age.min, age.max), default=EngineOptions.retry_max_age,
                       metavar="SECONDS",
                       help="a delivery's default retry.maxAgeSeconds (the construct's retry_max_age): a failed "
                            "attempt whose next one would start later than this after the due time is parked "
                            f"({age.min}-{age.max}; default {EngineOptions.retry_max_age})")
    lateness = contract.MAX_LATENESS_SECONDS
    local.add_argument("--max-lateness", type=_seconds_in(lateness.min, lateness.max), default=None, metavar="SECONDS",
                       help="the default lateness bound, a schedule's maxLatenessSeconds when it gives none (the "
                            "construct's max_lateness): a delivery that would start later than this after its due "
                            "time is not started (a one-shot ends FAILED, stale, in the dead-letter queue; a periodic "
                            f"occurrence is skipped) ({lateness.min}-{lateness.max}; default none: delivered late)")
    local.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS, default=None,
                       help="the runtime's log level (the construct's log_level): its records at this level and "
                            f"above go to stderr (default {contract.DEFAULT_LOG_LEVEL}; INFO with --verbose)")
    local.add_argument("--metrics-namespace", default=contract.DEFAULT_METRICS_NAMESPACE,
                       help="the runtime's metrics namespace (the construct's metrics_namespace; "
                            f"default {contract.DEFAULT_METRICS_NAMESPACE})")
    local.add_argument("--verbose", "-v", action="store_true",
                       help="log the runtime's events (--log-level INFO) and the engine's own to stderr")

    recover = commands.add_parser(
        "recover-stream", help="re-enqueue the timers of a stream range the enqueuer's mapping gave up on",
        description="Invoke the enqueuer with {\"recover\": <message>}: it reads the range the message names back "
                    "from the stream (records stay 24 h) and sends or writes back its claimed timers. Idempotent.")
    recover.add_argument("--destination-message", required=True, metavar="JSON",
                         help="the on-failure message from the dead-letter queue (its body), or @FILE")
    recover.add_argument("--function-name", default="delayed-scheduler-enqueuer",
                         help="the enqueuer function (default: the local engine's)")
    recover.add_argument("--endpoint-url", help="Lambda's endpoint (the local engine's lambda_endpoint_url); "
                                                "default: AWS, with the usual credentials and region")

    from .redrive_command import add_redrive_parser  # noqa: PLC0415

    add_redrive_parser(commands)

    from .check_command import add_check_parser  # noqa: PLC0415

    add_check_parser(commands)

    demo = commands.add_parser("demo", help="schedule a mix of timers through the API and report their lateness")
    demo.add_argument("--timers", type=_positive_int, default=120, help="how many timers to schedule (default 120)")

    from .chaos import DEFAULT_FAULTS  # noqa: PLC0415

    chaos = commands.add_parser(
        "chaos", help="run timers, cancels and periodic timers under injected faults and check that none is lost",
        description="Exit 1 if any timer is lost, early, delivered after its cancel or DELETE, or duplicated "
                    "under another dedupeKey, or a create answered 2xx was not honoured.")
    chaos.add_argument("--timers", type=_positive_int, default=2000, help="one-shot timers (default 2000)")
    chaos.add_argument("--span", type=_positive_float, default=20.0,
                       help="seconds over which the timers fall due (default 20)")
    chaos.add_argument("--json", action="store_true", help="print the report as JSON too")
    _add_fault_options(chaos, default=DEFAULT_FAULTS)
    return parser


def _add_engine_options(parser: argparse.ArgumentParser) -> None:
    window, shards = EngineOptions.delay_window, EngineOptions.shard_count
    parser.add_argument("--delay-window", type=_positive_int, default=window,
                        help=f"seconds: schedules due within it go straight to the delayer queue, later ones wait "
                             f"for the sweeper (the construct's delay_window; default {window})")
    parser.add_argument("--sweep-interval", type=_positive_float, default=60.0, help="seconds between sweeps (default 60)")
    parser.add_argument("--shard-count", type=_positive_int, default=shards,
                        help=f"timer partitions (the construct's shard_count; default {shards})")
    parser.add_argument("--listing", action="store_true",
                        help="serve GET /schedules (the construct's listing): each create and status change "
                             "also writes the listing index")
    parser.add_argument("--require-signature", action="store_true",
                        help="answer 403 to API requests without a well-formed SigV4 Authorization header, "
                             "as API Gateway with IAM auth does")
    _add_fault_options(parser, default=None)


def _add_fault_options(parser: argparse.ArgumentParser, default: str | None) -> None:
    from .faults import FAULT_KINDS  # noqa: PLC0415

    parser.add_argument("--faults", type=_fault_spec, default=default, metavar="SPEC",
                        help="inject faults: kind=rate[,kind=rate...] (all=rate sets every kind); kinds: "
                             + ", ".join(FAULT_KINDS) + (f" (default {default})" if default else ""))
    parser.add_argument("--seed", type=int, default=1, help="seed of the fault RNG (default 1)")


def _fault_spec(text: str) -> str:
    from .faults import FaultSpecError, parse_spec  # noqa: PLC0415

    try:
        parse_spec(text)
    except FaultSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "recover-stream":
        return _recover_stream(args)
    if args.command == "redrive":
        from .redrive_command import run_redrive  # noqa: PLC0415

        return run_redrive(args)
    if args.command == "check":
        from .check_command import run_check_command  # noqa: PLC0415

        return run_check_command(args)
    from .._local_required import ENGINE, require_local  # noqa: PLC0415

    try:
        require_local(f"cdk-delayed-scheduler {args.command}", (*ENGINE, "rich") if args.command == "demo" else ENGINE)
    except ModuleNotFoundError as missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    from .engine import Engine  # noqa: PLC0415 - keeps --help fast
    if args.command == "demo":
        from .demo import run_demo  # noqa: PLC0415

        return run_demo(args.timers)
    if args.command == "chaos":
        return _run_chaos(args)
    return _run_local(args, Engine)


def _run_local(args: argparse.Namespace, engine_class: type[Engine]) -> int:
    from .deliveries import handler_target, stdout_target, url_target  # noqa: PLC0415
    from .target_file import read_target_file  # noqa: PLC0415

    log_level = args.log_level or ("INFO" if args.verbose else contract.DEFAULT_LOG_LEVEL)
    stderr = logging.StreamHandler(sys.stderr)
    # The runtime's records arrive only at --log-level and above; the engine's own INFO with --verbose.
    stderr.addFilter(lambda r: r.levelno >= logging.WARNING or r.name.startswith("scheduler_runtime")
                     or (args.verbose and r.name.startswith("cdk_delayed_scheduler")))
    stderr.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[stderr])
    try:
        if args.target_url:
            target = url_target(args.target_url)
        elif args.target_handler:
            target = handler_target(args.target_handler)
        else:
            target = stdout_target()
        named = read_target_file(args.targets) if args.targets else {}
        outcomes = outcomes_from_flags(args, named)
        options = EngineOptions(
            port=args.port, target=target, targets=dict(named), delay_window=args.delay_window,
            sweep_interval=args.sweep_interval, shard_count=args.shard_count, endpoint_url=args.endpoint_url,
            state_dir=args.state_dir, listing=args.listing, require_signature=args.require_signature,
            faults=args.faults, seed=args.seed, dispatcher_timeout=args.dispatcher_timeout, log_level=log_level,
            metrics_namespace=args.metrics_namespace, retry_max_age=args.retry_max_age, max_lateness=args.max_lateness,
            dispatcher_batch_size=args.dispatcher_batch_size,
            dispatcher_max_batching_window=args.dispatcher_max_batching_window, precision=args.precision,
            outcomes=outcomes, outcome_kinds=args.outcome_kinds, outcomes_include_payload=args.outcomes_include_payload,
            flow_control=flow_control_from_flags(args),
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        engine = engine_class(options).start()
    except OSError as exc:
        print(f"error: cannot start the engine: {exc}", file=sys.stderr)
        return 1
    for line in endpoint_lines(engine):
        print(line, file=sys.stderr, flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        engine.stop()
        print("cdk-delayed-scheduler local: stopped", file=sys.stderr, flush=True)
    return 0


def endpoint_lines(engine: Engine) -> list[str]:
    """What the CLI prints once the engine runs: every endpoint a user needs, each with the setting that
    reaches it."""
    from .deliveries import HttpsTarget, LambdaTarget  # noqa: PLC0415
    from .engine import API_FUNCTION, ENQUEUER_FUNCTION, REGION  # noqa: PLC0415

    return [
        f"cdk-delayed-scheduler local: API on {engine.api_url} (Ctrl-C stops)",
        f"  direct invoke: function {API_FUNCTION} (and {ENQUEUER_FUNCTION} for recover-stream) with "
        f"AWS_ENDPOINT_URL_LAMBDA={engine.lambda_endpoint_url} AWS_DEFAULT_REGION={REGION} (any credentials)",
        f"  moto (DynamoDB, DynamoDB Streams, SQS, SNS, EventBridge, Step Functions, Secrets Manager): "
        f"AWS_ENDPOINT_URL={engine.endpoint_url}",
        *(f"  target {name}: its deliveries arrive in the queue {url}" for name, url in engine.target_queue_urls.items()),
        *(f"  target {name}: its deliveries start executions of the state machine {arn}"
          for name, arn in engine.target_state_machine_arns.items()),
        *(_called_target_line(name, spec) for name, spec in engine.options.targets.items()
          if isinstance(spec, (HttpsTarget, LambdaTarget))),
        *([f"  outcomes: the outcome events arrive in the queue {engine.outcomes_queue_url}"]
          if engine.outcomes_queue_url else []),
        *([f"  outcomes: the outcome events start executions of the state machine {engine.outcomes_state_machine_arn}"]
          if engine.outcomes_state_machine_arn else []),
    ]


def _called_target_line(name: str, spec: HttpsTarget | LambdaTarget) -> str:
    """The banner's line for a named target the engine calls (an HTTPS endpoint, a Lambda handler)."""
    from .deliveries import HttpsTarget  # noqa: PLC0415

    if isinstance(spec, HttpsTarget):
        return f"  target {name}: its deliveries are POSTed to {spec.url}, signed with its secret"
    handler = f"{spec.handler.__module__}:{spec.handler.__qualname__}" if spec.handler else "none (records only)"
    return f"  target {name}: its deliveries invoke the Lambda handler {handler} ({spec.invocation_type})"


def _run_chaos(args: argparse.Namespace) -> int:
    from .chaos import run_chaos  # noqa: PLC0415
    from .chaos_checks import as_json  # noqa: PLC0415

    logging.getLogger().addHandler(logging.NullHandler())  # injected faults make the runtime log errors: expected
    report = run_chaos(args.timers, args.faults, args.seed, args.span, say=lambda line: print(line, flush=True))
    for line in report.lines():
        print(line)
    if args.json:
        print(as_json(report))
    print("OK: none lost" if report.ok else "FAILED")
    return 0 if report.ok else 1


def _recover_stream(args: argparse.Namespace) -> int:
    """Invoke the enqueuer with the on-failure message; print its answer; 1 if it failed."""
    import json  # noqa: PLC0415

    import botocore.session  # noqa: PLC0415 - only this command needs it; botocore is in the base install

    text = args.destination_message
    if text.startswith("@"):
        text = Path(text[1:]).read_text(encoding="utf-8")
    try:
        message = json.loads(text)
    except ValueError as exc:
        print(f"error: --destination-message is not JSON: {exc}", file=sys.stderr)
        return 2
    client = botocore.session.get_session().create_client("lambda", endpoint_url=args.endpoint_url)
    response = client.invoke(FunctionName=args.function_name, Payload=json.dumps({"recover": message}).encode())
    print(response["Payload"].read().decode())
    return 1 if response.get("FunctionError") else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
