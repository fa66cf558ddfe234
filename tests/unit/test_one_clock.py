"""The runtime reads the time and waits only through the clock it is given: no module but
``scheduler_runtime/clock.py`` reads the wall clock.

Every module of ``lambda/scheduler_runtime`` is parsed (its syntax tree, so a comment or a string
that names ``time.time()`` is not a read, and an alias such as ``import time as t`` or
``from ..core.timeparse import now_ms as clock_ms`` is). A read is a reference to a clock function of
``time`` (``time``, ``time_ns``, ``monotonic``, ``perf_counter``, ``sleep``...), to ``now``, ``utcnow`` or
``today`` of ``datetime``'s classes, or to a module-level ``now_ms`` of another runtime module (the
old ``core.timeparse.now_ms`` was the wall clock), whether called or passed on.
"""

from __future__ import annotations

import ast
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "lambda" / "scheduler_runtime"
PACKAGE = "scheduler_runtime"
CLOCK_MODULE = "clock.py"
TIME_READS = frozenset({"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns",
                        "sleep", "clock_gettime", "clock_gettime_ns"})
DATETIME_CLASSES = frozenset({"datetime", "date"})
DATETIME_READS = frozenset({"now", "utcnow", "today"})
MODULE_CLOCK = "now_ms"
REAL_CLOCK_NAMED = {"aws/https_target.py"}
"""Where the clock module's real clock may be named: a webhook's signature is checked by its receiver against
the receiver's own real clock, and kept-alive connections and cached secrets age in real time."""


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join((package, *parts[:-1])) if parts[-1] == "__init__" else ".".join((package, *parts))


def _bindings(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """Each name an import binds (anywhere in the module: a function may import lazily), and the
    dotted name it stands for (``t`` for ``time``; ``clock_ms`` for ``scheduler_runtime.core.timeparse.now_ms``)."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                source = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{source}.{alias.name}"
    return bound


def _dotted(node: ast.expr, bound: dict[str, str]) -> str | None:
    """``node`` (a name, or attributes of one) as the dotted name it reads, its first name resolved by ``bound``."""
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value, bound)
        return None if owner is None else f"{owner}.{node.attr}"
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    return None


def _is_read(name: str, runtime_modules: set[str]) -> bool:
    module, _, attribute = name.rpartition(".")
    return ((module == "time" and attribute in TIME_READS)
            or (module in {f"datetime.{c}" for c in DATETIME_CLASSES} and attribute in DATETIME_READS)
            or (module in runtime_modules and attribute == MODULE_CLOCK))


class _Reads(ast.NodeVisitor):
    """The reads of one module, as ``(line, column, dotted name)``; a function's parameter or local variable
    of the same name as an import (``def cancel(self, group, now_ms)``) is a value, not the import."""

    def __init__(self, bound: dict[str, str], runtime_modules: set[str]) -> None:
        self.bound, self.runtime_modules = bound, runtime_modules
        self.shadowed: list[set[str]] = []
        self.found: set[tuple[int, int, str]] = set()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        parameters = node.args
        names = {a.arg for a in (*parameters.posonlyargs, *parameters.args, *parameters.kwonlyargs)}
        names |= {a.arg for a in (parameters.vararg, parameters.kwarg) if a is not None}
        names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for default in (*parameters.defaults, *parameters.kw_defaults):  # evaluated where the function is defined
            if default is not None:
                self.visit(default)
        self.shadowed.append(names)
        for child in (node.body if isinstance(node.body, list) else [node.body]):
            self.visit(child)
        self.shadowed.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _check(self, node: ast.Attribute | ast.Name) -> None:
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and any(root.id in names for names in self.shadowed):
            return
        name = _dotted(node, self.bound)
        if name is not None and _is_read(name, self.runtime_modules):
            self.found.add((node.lineno, node.col_offset, name))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load):
            self._check(node)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._check(node)


def wall_clock_reads(root: Path = RUNTIME, package: str = PACKAGE) -> list[str]:
    """Every wall-clock read under ``root`` (the package ``package``) outside its clock module, as
    ``<path>:<line>: <what it reads>``, in file and line order."""
    clock_module = f"{package}.{CLOCK_MODULE[:-3]}"
    runtime_modules = {_module_name(path, root, package) for path in root.rglob("*.py")} - {clock_module}
    reads = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative == CLOCK_MODULE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=relative)
        visitor = _Reads(_bindings(tree, _module_name(path, root, package), path.name == "__init__.py"), runtime_modules)
        visitor.visit(tree)
        reads.extend(f"{relative}:{line}: {name}" for line, _, name in sorted(visitor.found))
    return reads


def real_clock_namings(root: Path = RUNTIME, package: str = PACKAGE) -> list[str]:
    """Where a module other than the clock module names its real clock (``REAL``), as ``<path>:<line>``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative == CLOCK_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=relative)):
            named = ((isinstance(node, ast.Name) and node.id == "REAL")
                     or (isinstance(node, ast.Attribute) and node.attr == "REAL")
                     or (isinstance(node, ast.alias) and node.name == "REAL"))
            if named:
                found.append(f"{relative}:{getattr(node, 'lineno', 0)}")
    return found


def test_no_runtime_module_but_the_clock_module_reads_the_wall_clock():
    reads = wall_clock_reads()
    assert not reads, f"{len(reads)} wall-clock reads outside {CLOCK_MODULE} (read ctx.clock instead):\n" + "\n".join(reads)


def test_the_real_clock_is_named_only_where_a_peer_reads_real_time():
    elsewhere = [where for where in real_clock_namings() if where.split(":")[0] not in REAL_CLOCK_NAMED]
    assert not elsewhere, "the real clock named outside the clock module: " + ", ".join(elsewhere)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / PACKAGE
    for name, text in {"__init__.py": "", "core/__init__.py": "", "aws/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_each_kind_of_read_is_found_and_named_by_its_file_and_line(tmp_path):
    root = _tree(tmp_path, {
        "clock.py": "import time\n\ndef now_ms():\n    return time.time_ns() // 1_000_000\n",
        "core/timeparse.py": "import time\n\n\ndef now_ms():\n    return time.time_ns() // 1_000_000\n",
        "aws/waits.py": ("import time as t\nfrom time import monotonic\n\n\ndef pause(clock=t.time):\n"
                         "    t.sleep(1)\n    return monotonic()\n"),
        "aws/dates.py": ("import datetime as dt\nfrom datetime import datetime\n\n\n"
                         "def today():\n    return dt.date.today(), datetime.now(), datetime.fromtimestamp(0)\n"),
        "aws/stamps.py": ("from ..core.timeparse import now_ms as clock_ms\nfrom ..core import timeparse\n\n\n"
                          "def stamp(ctx):\n    return clock_ms(), timeparse.now_ms(), ctx.clock.now_ms()\n\n\n"
                          "def given(clock_ms):\n    return clock_ms + 1\n"),
        "handlers/__init__.py": "",
        "handlers/lazy.py": ("def later(ctx):\n    from ..core.timeparse import now_ms\n\n"
                             "    return now_ms() - ctx.clock.now_ms()\n"),
    })
    assert wall_clock_reads(root) == [
        "aws/dates.py:6: datetime.date.today",
        "aws/dates.py:6: datetime.datetime.now",
        "aws/stamps.py:6: scheduler_runtime.core.timeparse.now_ms",
        "aws/stamps.py:6: scheduler_runtime.core.timeparse.now_ms",
        "aws/waits.py:5: time.time",
        "aws/waits.py:6: time.sleep",
        "aws/waits.py:7: time.monotonic",
        "core/timeparse.py:5: time.time_ns",
        "handlers/lazy.py:4: scheduler_runtime.core.timeparse.now_ms",
    ]


def test_a_read_added_to_a_module_that_reads_only_its_given_clock_is_found(tmp_path):
    given = "def stamp(ctx):\n    return ctx.clock.now_ms()\n"
    root = _tree(tmp_path, {"clock.py": "import time\n", "aws/stamps.py": given})
    assert wall_clock_reads(root) == []
    (root / "aws/stamps.py").write_text("import time\n\n\n" + given + "\n\ndef nap():\n    time.sleep(0.1)\n")
    assert wall_clock_reads(root) == ["aws/stamps.py:9: time.sleep"]


def test_the_real_clock_named_elsewhere_is_found(tmp_path):
    root = _tree(tmp_path, {"clock.py": "REAL = object()\n",
                            "aws/https_target.py": "from ..clock import REAL\n",
                            "aws/delivery.py": "from .. import clock\n\n\ndef f():\n    return clock.REAL.now_ms()\n"})
    assert real_clock_namings(root) == ["aws/delivery.py:5", "aws/https_target.py:1"]
