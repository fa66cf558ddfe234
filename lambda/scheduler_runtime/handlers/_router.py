"""The api function's one route table: every route of ``contract.json`` (:data:`contract.ROUTES`),
each answered by the function registered for its operation, as Powertools'
``APIGatewayHttpResolver`` answers each route with the function registered for it.

A route's path is a template (``/schedules/{id}``): a literal segment matches itself and ``{name}``
any one segment, which is validated (a bad ``id`` is a 400 naming ``id``) before the method is
looked at. A path that no template matches answers 404; a path that one matches, with a method none
of its routes has, answers 405 naming the methods it has. Where two templates match, the one with
more literal segments wins (``/schedules/summary`` over ``/schedules/{id}``).

Functions register per operation in an :class:`Operations` table (``@OPERATIONS.answers("getSchedule")``),
and a :class:`Router` includes tables. A table most deployments never call can be included lazily
(:meth:`Router.include_lazily`): its module is imported by the first request to one of its routes, so
it adds nothing to the cold start of the others. :meth:`Router.check` refuses a route that nothing
answers; :meth:`Router.include` an operation that no route has.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from ..aws.context import Context
from ..core import contract
from ..core.targets_api import validate_target_name
from ..core.validation import ApiError, validate_group, validate_schedule_id
from ._api_events import ApiRequest

Answer = tuple[int, dict[str, Any]]
"""A status and a JSON body."""

PATH_PARAMETERS: Mapping[str, Callable[[Any], str]] = {"id": validate_schedule_id, "group": validate_group,
                                                       "name": validate_target_name}
"""How each ``{name}`` of a path template is validated (an unknown name is refused at start)."""


@dataclass(frozen=True)
class Call:
    """One routed request, as a registered function receives it."""

    ctx: Context
    request: ApiRequest
    route: contract.Route
    params: Mapping[str, str]
    """The path parameters, validated (``{"id": ...}`` for ``/schedules/{id}``)."""

    @property
    def id(self) -> str:
        return self.params["id"]


Function = Callable[[Call], Answer]


class Operations:
    """Functions by operation: one module's share of the routes (by default, of ``contract.json``'s)."""

    def __init__(self, routes: Sequence[contract.Route] = contract.ROUTES) -> None:
        self._known = frozenset(route.operation for route in routes)
        self._functions: dict[str, Function] = {}

    def answers(self, operation: str) -> Callable[[Function], Function]:
        """Register the decorated function as the answer of ``operation``, which a route must have."""
        if operation not in self._known:
            raise ValueError(f"no route has the operation {operation!r}")

        def register(function: Function) -> Function:
            if operation in self._functions:
                raise ValueError(f"operation {operation!r} is answered twice")
            self._functions[operation] = function
            return function

        return register

    @property
    def functions(self) -> Mapping[str, Function]:
        return MappingProxyType(self._functions)


@dataclass(frozen=True)
class _Template:
    path: str
    segments: tuple[str, ...]

    @classmethod
    def of(cls, path: str) -> "_Template":
        template = cls(path, tuple(s for s in path.split("/") if s))
        unknown = [name for name in template.parameters if name not in PATH_PARAMETERS]
        if unknown:
            raise ValueError(f"route {path}: no validation for the path parameter {unknown[0]!r}")
        return template

    @property
    def parameters(self) -> list[str]:
        return [s[1:-1] for s in self.segments if s.startswith("{") and s.endswith("}")]

    @property
    def literals(self) -> int:
        return len(self.segments) - len(self.parameters)

    def match(self, segments: Sequence[str]) -> dict[str, str] | None:
        """The path parameters' raw values when ``segments`` fit this template; ``None`` otherwise."""
        if len(segments) != len(self.segments):
            return None
        params: dict[str, str] = {}
        for pattern, segment in zip(self.segments, segments):
            if pattern.startswith("{") and pattern.endswith("}"):
                params[pattern[1:-1]] = segment
            elif pattern != segment:
                return None
        return params


class Router:
    """Answers each request with the function registered for the operation of the route it matches."""

    def __init__(self, routes: Sequence[contract.Route] = contract.ROUTES) -> None:
        self._routes = tuple(routes)
        self._templates = {route.path: _Template.of(route.path) for route in self._routes}
        self._functions: dict[str, Function] = {}
        self._lazy: dict[str, str] = {}
        """Operation -> the module whose ``OPERATIONS`` answer it, not imported yet."""
        self._lock = threading.Lock()

    def include(self, operations: Operations) -> None:
        """Answer the routes of ``operations``' operations with its functions."""
        known = {route.operation for route in self._routes}
        unknown = sorted(set(operations.functions) - known)
        if unknown:
            raise ValueError(f"no route has the operation {unknown[0]!r}")
        twice = sorted(set(operations.functions) & set(self._functions))
        if twice:
            raise ValueError(f"operation {twice[0]!r} is answered twice")
        self._functions.update(operations.functions)

    def include_lazily(self, module: str, under: str) -> None:
        """Answer the routes at ``under`` and below it with ``module``'s ``OPERATIONS``, imported on first use."""
        below = under.rstrip("/") + "/"
        operations = [r.operation for r in self._routes if r.path == under or r.path.startswith(below)]
        if not operations:
            raise ValueError(f"no route is at or under {under}")
        self._lazy.update(dict.fromkeys(operations, module))

    def check(self) -> None:
        """Raise unless every route is answered (now or by a lazily included module)."""
        unanswered = [f"{r.method} {r.path} ({r.operation})" for r in self._routes
                      if r.operation not in self._functions and r.operation not in self._lazy]
        if unanswered:
            raise RuntimeError(f"no function answers {', '.join(unanswered)}")

    def load_lazily_included(self) -> None:
        """Import every lazily included module now, checking that each answers exactly its routes."""
        for operation in list(self._lazy):
            self._function(operation)

    @property
    def operations(self) -> frozenset[str]:
        """The operations answered by a function now (lazily included ones once their module is loaded)."""
        return frozenset(self._functions)

    def answer(self, ctx: Context, request: ApiRequest) -> Answer:
        """The answer of the function of the route ``request`` matches; :class:`ApiError` 404, 405 or 400."""
        matches = [(template, params) for template in self._templates.values()
                   if (params := template.match(request.segments)) is not None]
        if not matches:
            raise ApiError(404, f"no route for {request.method} {request.path}", None)
        template, raw = max(matches, key=lambda match: match[0].literals)
        params = {name: PATH_PARAMETERS[name](request.path_parameters.get(name) or value)
                  for name, value in raw.items()}
        routes = [route for route in self._routes if route.path == template.path]
        route = next((r for r in routes if r.method == request.method), None)
        if route is None:
            allowed = " or ".join(r.method for r in routes)
            raise ApiError(405, f"method {request.method} is not allowed on {template.path}; use {allowed}", None)
        return self._function(route.operation)(Call(ctx, request, route, params))

    def _function(self, operation: str) -> Function:
        function = self._functions.get(operation)
        if function is not None:
            return function
        module = self._lazy[operation]
        with self._lock:
            if operation not in self._functions:
                loaded: Operations = importlib.import_module(module).OPERATIONS
                expected = {op for op, name in self._lazy.items() if name == module}
                if set(loaded.functions) != expected:
                    raise RuntimeError(f"{module} answers {sorted(loaded.functions)}, "
                                       f"not the routes it was included for: {sorted(expected)}")
                self.include(loaded)
        return self._functions[operation]
