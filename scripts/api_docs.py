"""Generate API.md from the construct's docstrings.

    ./dev api-docs           # rewrite API.md
    ./dev api-docs --check   # exit 1 when API.md is stale (the test suite checks this too)

Sources: the class and method docstrings (``:param name: text`` lines become the props
tables), the signatures (types and defaults), and the string literal that follows each
``self.attribute = ...`` in the construct's source (the attributes table).
"""

from __future__ import annotations

import argparse
import ast
import inspect
import re
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
API_MD = REPO / "API.md"
sys.path.insert(0, str(REPO / "src"))

HEADER = """# API reference

Generated from the docstrings by `scripts/api_docs.py` (`./dev api-docs`); do not edit by hand.

```python
from cdk_delayed_scheduler import (DelayedScheduler, PeriodicTimer, SchedulerApi, ApiAuthorization, LogLevel,
                                   DeliveryPrecision, TableCapacity, Outcomes, OutcomeKind, targets)
```

Types are written as in the source: `lambda_` is `aws_cdk.aws_lambda`, `sqs` is `aws_cdk.aws_sqs`, and
so on for each `aws_cdk` module; `cloudwatch` is `aws_cdk.aws_cloudwatch`.
"""

_PARAM = re.compile(r"^:param (\w+):\s*(.*)$")


def _split_doc(doc: str | None) -> tuple[str, dict[str, str]]:
    """(prose, {param: description}) from a docstring with ``:param x:`` fields."""
    prose, params, current = [], {}, None
    for line in inspect.cleandoc(doc or "").splitlines():
        match = _PARAM.match(line.strip())
        if match:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif current and line.startswith((" ", "\t")) and line.strip():
            params[current] += " " + line.strip()
        else:
            current = None
            prose.append(line)
    return "\n".join(prose).strip(), params


def _examples(prose: str) -> str:
    """``Example::`` and its indented block as a fenced Python block."""
    out, lines, i = [], prose.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if not line.rstrip().endswith("::"):
            out.append(line)
            i += 1
            continue
        out += [line.rstrip()[:-1], "", "```python"]
        i += 1
        block = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
            block.append(lines[i])
            i += 1
        out += textwrap.dedent("\n".join(block)).strip("\n").splitlines() + ["```", ""]
    return "\n".join(out)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _annotation(parameter: inspect.Parameter) -> str:
    annotation = parameter.annotation
    if annotation is inspect.Parameter.empty:
        return ""
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))


def _default(parameter: inspect.Parameter) -> str:
    if parameter.default is inspect.Parameter.empty:
        return "required"
    value = parameter.default
    if value is None:
        return "`None`"
    if hasattr(value, "name") and type(value).__module__.startswith("aws_cdk"):
        return f"`{type(value).__name__}.{value.name}`"
    return f"`{value!r}`"


def _returns(function) -> str:
    annotation = inspect.signature(function).return_annotation
    if annotation in (inspect.Signature.empty, None, "None"):
        return ""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    return " -> " + text.strip("'\"")


def _signature(name: str, function) -> str:
    parameters = []
    for p in inspect.signature(function).parameters.values():
        if p.name == "self":
            continue
        if p.kind is inspect.Parameter.KEYWORD_ONLY and "*" not in parameters:
            parameters.append("*")
        parameters.append("**" + p.name if p.kind is inspect.Parameter.VAR_KEYWORD else p.name)
    return f"{name}({', '.join(parameters)})" + ("" if name[:1].isupper() else _returns(function))


def _params_table(function, descriptions: dict[str, str]) -> list[str]:
    rows = ["| name | type | description |", "|---|---|---|"]
    for p in inspect.signature(function).parameters.values():
        if p.name in ("self", "scope", "id") or p.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        rows.append(f"| `{p.name}` | `{_cell(_annotation(p))}` | {_cell(descriptions.get(p.name, ''))} |")
    return rows


def _attribute_docs(cls) -> list[tuple[str, str, str]]:
    """``self.name: type = ...`` followed by a string literal, in source order: (name, type, doc)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    found: list[tuple[str, str, str]] = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for statement, following in zip(body, body[1:]):
            targets = statement.targets if isinstance(statement, ast.Assign) else (
                [statement.target] if isinstance(statement, ast.AnnAssign) else [])
            documented = (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                          and isinstance(following.value.value, str))
            kind = ast.unparse(statement.annotation) if isinstance(statement, ast.AnnAssign) else ""
            for target in targets:
                if not documented:
                    continue
                doc = inspect.cleandoc(following.value.value)
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    found.append((target.attr, kind, doc))
                elif isinstance(node, ast.ClassDef) and isinstance(target, ast.Name):  # a documented field
                    found.append((target.id, kind, doc))
    return found


def _public_members(cls):
    """Public members of ``cls`` and of the package's own classes it inherits from (mixins)."""
    seen = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("cdk_delayed_scheduler"):
            continue
        for name, member in klass.__dict__.items():
            if not name.startswith("_") and name not in seen:
                seen.add(name)
                yield name, member


def _document_class(cls, heading: str = "##", title: str | None = None) -> list[str]:
    prose, params = _split_doc(cls.__doc__)
    out = [f"{heading} {title or cls.__name__}", "", _examples(prose), ""]
    init = cls.__dict__.get("__init__")
    if init is not None and params:
        out += [f"**Constructor:** `{_signature(cls.__name__, init)}`", ""]
        out += _params_table(init, params) + [""]
    attributes = _attribute_docs(cls)
    properties = [(n, m) for n, m in _public_members(cls) if isinstance(m, property)]
    if attributes or properties:
        out += [f"{heading}# Attributes", "", "| name | type | description |", "|---|---|---|"]
        out += [f"| `{name}` | `{_cell(kind)}` | {_cell(doc)} |" for name, kind, doc in attributes]
        out += [f"| `{name}` | `{_cell(_returns(m.fget).removeprefix(' -> '))}` | {_cell(inspect.getdoc(m) or '')} |"
                for name, m in properties]
        out.append("")
    methods = [(n, m) for n, m in _public_members(cls) if inspect.isfunction(m) or isinstance(m, staticmethod)]
    if methods:
        out += [f"{heading}# Methods", ""]
        for name, member in methods:
            function = member.__func__ if isinstance(member, staticmethod) else member
            method_prose, method_params = _split_doc(function.__doc__)
            prefix = f"{cls.__name__}." if isinstance(member, staticmethod) else ""
            out += [f"{heading}## `{prefix}{_signature(name, function)}`", "", _examples(method_prose), ""]
            for param, text in method_params.items():
                out.append(f"- `{param}`: {_cell(text)}")
            if method_params:
                out.append("")
    return out


def render() -> str:
    from cdk_delayed_scheduler import (_alarms, _log_level, _outcomes, _precision, _table_capacity, api, outcome,
                                       periodic, scheduler, targets)

    lines = [HEADER]
    lines += _document_class(scheduler.DelayedScheduler)
    lines += _document_class(_alarms.SchedulerAlarms)
    lines += _document_class(periodic.PeriodicTimer)
    lines += _document_class(api.SchedulerApi)
    lines += _document_class(api.ApiAuthorization)
    lines += _document_class(_log_level.LogLevel)
    lines += _document_class(_precision.DeliveryPrecision)
    lines += _document_class(_table_capacity.TableCapacity)
    lines += _document_class(_outcomes.Outcomes)
    lines += _document_class(outcome.OutcomeKind)
    module_prose, _ = _split_doc(targets.__doc__)
    lines += ["## `targets`", "", _examples(module_prose), ""]
    for name in targets.__all__:
        lines += _document_class(getattr(targets, name), heading="###", title=f"targets.{name}")
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate API.md from the docstrings.")
    parser.add_argument("--check", action="store_true", help="exit 1 when API.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = API_MD.read_text() if API_MD.exists() else ""
        if current != text:
            print("API.md is stale: run ./dev api-docs", file=sys.stderr)
            return 1
        print("API.md is current")
        return 0
    API_MD.write_text(text)
    print(f"wrote {API_MD.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
