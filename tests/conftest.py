"""Suite-wide settings: no test reaches beyond 127.0.0.1, and boto3 never finds real credentials.

Some end-to-end runs spend most of their time waiting on the clock: the suite's chaos run waits for
retries, the demo for its timers, the cron run for the next whole minute (EventBridge cron has
minute resolution). The controlling pytest process starts each of them when the session begins, as a
user runs it (the console script, or a script of the suite), when its module is selected, so that its
waits overlap the other modules; its module then reads the output. Run alone (or if the controller
did not start it), the module runs it itself.
"""

import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.waiting import wait_until

os.environ.setdefault("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")

E2E = Path(__file__).parent / "e2e"
SCRIPT = Path(sys.executable).with_name("cdk-delayed-scheduler")
# Rates raised for the rarer opportunities (batch sends, dispatcher requests, target calls), so that each
# kind is expected at least about eight times in a run this small.
SUITE_FAULTS = ("all=0.03,batch-fail=0.25,batch-partial=0.25,crash=0.012,lambda-throttle=0.08,target-error=0.05,"
                "target-timeout=0.04")
SUITE_CHAOS_ARGS = ["--timers", "150", "--span", "6", "--faults", SUITE_FAULTS, "--seed", "3", "--json"]


@dataclass(frozen=True)
class EarlyRun:
    """A run the session starts as it begins: ``command`` for the test module ``module``."""

    name: str
    module: Path
    command: tuple[str, ...]

    @property
    def report_env(self) -> str:
        """The variable that holds the report's path, once the controller started it (workers inherit it)."""
        return f"CDK_DELAYED_SCHEDULER_SUITE_{self.name.upper()}_REPORT"

    def shell(self, report: Path) -> list[str]:
        """The run: its output goes to ``report`` (renamed into place once it ends), its exit code to
        ``report`` + ``.rc``."""
        run = " ".join(f"'{part}'" for part in self.command)
        return ["sh", "-c", f"{run} > '{report}.part' 2>&1; echo $? > '{report}.rc'; mv '{report}.part' '{report}'"]

    def start(self) -> subprocess.Popen:
        report = Path(tempfile.mkdtemp(prefix=f"suite-{self.name}-")) / "report.txt"
        os.environ[self.report_env] = str(report)
        return subprocess.Popen(self.shell(report), start_new_session=True)

    def output(self, timeout: float) -> tuple[int, str]:
        """The run's exit code and output: the session's run, waited for, or else a run of its own."""
        if self.report_env in os.environ:
            report = Path(os.environ[self.report_env])
        else:
            report = Path(tempfile.mkdtemp(prefix=f"suite-{self.name}-")) / "report.txt"
            subprocess.run(self.shell(report), check=False, timeout=timeout)
        wait_until(report.exists, timeout, f"the suite's {self.name} run ended")
        return int(Path(f"{report}.rc").read_text()), report.read_text()


CHAOS = EarlyRun("chaos", E2E / "test_chaos_e2e.py", (str(SCRIPT), "chaos", *SUITE_CHAOS_ARGS))
DEMO = EarlyRun("demo", E2E / "test_demo_e2e.py", (str(SCRIPT), "demo", "--timers", "8"))
CRON = EarlyRun("cron", E2E / "test_periodic_cron_e2e.py", (sys.executable, str(E2E / "cron_run.py")))
EARLY_RUNS = (CHAOS, DEMO, CRON)
# The construct checks whose work is a long child process (a wheel built, installed and synthesized,
# with cdk-nag 2; the synth at the floors; pyright; the engine without aws-cdk-lib; the integ snapshot): each
# is its module run as a script, which prints its result for the module's tests to read. Those that
# only compute run at a lower priority: they take the CPU the session leaves idle (the runs above wait
# on their timers) without slowing what keeps time; the engine run keeps time, so it does not.
CONSTRUCT = Path(__file__).parent / "construct"
LOWER_PRIORITY = ("nice", "-n", "10")
EARLY_RUNS += tuple(EarlyRun(name, CONSTRUCT / module, (*priority, sys.executable, str(CONSTRUCT / module)))
                    for name, module, priority in (("packaging", "test_packaging.py", LOWER_PRIORITY),
                                                   ("floor", "test_floor.py", LOWER_PRIORITY),
                                                   ("typing", "test_typing.py", LOWER_PRIORITY),
                                                   ("engine_only", "test_package_page.py", ()),
                                                   ("integ", "test_integ.py", LOWER_PRIORITY)))
# The testing kit's wheel check: the wheel with the local extra in a fresh venv, running the kit's example.
EARLY_RUNS += (EarlyRun("kit_wheel", Path(__file__).parent / "testing" / "test_kit_wheel.py",
                        (*LOWER_PRIORITY, sys.executable, str(Path(__file__).parent / "testing" / "test_kit_wheel.py"))),)
# The runtime's tests on the default runtime's Python, in environments of their own (uv.lock's packages; the SDK floor).
EARLY_RUNS += (EarlyRun("runtime_interpreters", E2E / "test_runtime_interpreters.py",
                        (*LOWER_PRIORITY, sys.executable, str(E2E / "test_runtime_interpreters.py"))),)
_started: list = []


FULL_TIER_MARKERS = ("e2e", "slow")
"""What only the full tier runs (``./dev test --all``): tests that need real time (the engine end to end, chaos,
the demo, the cron minute) or a child process of their own (a wheel, a venv, the CDK CLI, a deploy into moto)."""


def pytest_addoption(parser):
    parser.addoption("--all", action="store_true", dest="full_tier",
                     help="the full tier: add the tests marked e2e or slow (what CI runs) to the deterministic one")


def quick_tier(config) -> bool:
    """The deterministic tier: a run of the whole suite (no paths named) without ``--all``. Naming a path runs
    what it holds, whatever its tier."""
    return not config.getoption("full_tier") and config.args_source is not config.ArgsSource.ARGS


def _selects(config, module: Path) -> bool:
    if quick_tier(config):
        return False
    paths = [Path(str(arg).split("::")[0]).resolve() for arg in config.args] or [Path.cwd()]
    return any(module == path or path in module.parents for path in paths)


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        return
    for run in EARLY_RUNS:
        if run.report_env not in os.environ and _selects(config, run.module.resolve()):
            _started.append(run.start())


def pytest_collection_modifyitems(config, items):
    if not quick_tier(config):
        return
    keep, full = [], []
    for item in items:
        (full if any(item.get_closest_marker(name) for name in FULL_TIER_MARKERS) else keep).append(item)
    if full:
        config.hook.pytest_deselected(items=full)
        items[:] = keep


def pytest_unconfigure(config):
    for process in _started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
