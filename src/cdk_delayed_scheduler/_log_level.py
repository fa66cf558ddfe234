"""``LogLevel``: the runtime's log level, an enum-like class."""

from __future__ import annotations

from typing import ClassVar

from aws_cdk import Token

__all__ = ["LogLevel"]


class LogLevel:
    """The runtime's log level (its ``LOG_LEVEL``): ``LogLevel.DEBUG``, ``.INFO``, ``.WARNING``,
    ``.ERROR`` or ``.CRITICAL``; ``LogLevel.of(text)`` for a level held in text or a token.

    At WARNING and above only what needs a look is written; INFO and DEBUG give every event of
    every timer. Example::

        DelayedScheduler(self, "Timers", target=target, log_level=LogLevel.INFO)
    """

    NAMES: ClassVar[tuple[str, ...]] = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    DEBUG: ClassVar[LogLevel]
    INFO: ClassVar[LogLevel]
    WARNING: ClassVar[LogLevel]
    ERROR: ClassVar[LogLevel]
    CRITICAL: ClassVar[LogLevel]

    def __init__(self, name: str) -> None:
        self.name: str = name
        """The level's name (``"WARNING"``), or an unresolved token."""

    @staticmethod
    def of(name: str) -> LogLevel:
        """A level from text, in any case (``"info"``), or from an unresolved token such as a
        ``CfnParameter``'s value (passed to the runtime as it is; the functions then keep Lambda's
        text log format).

        :param name: one of DEBUG, INFO, WARNING, ERROR, CRITICAL, or a token.
        """
        if Token.is_unresolved(name):
            return LogLevel(name)
        if not isinstance(name, str) or name.upper() not in LogLevel.NAMES:
            raise ValueError(f"log_level: must be one of {', '.join(LogLevel.NAMES)}, got {name!r}")
        return LogLevel(name.upper())

    @property
    def is_token(self) -> bool:
        """Whether the level is an unresolved token."""
        return Token.is_unresolved(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogLevel) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"LogLevel.{self.name}" if self.name in LogLevel.NAMES else f"LogLevel.of({self.name!r})"


for _name in LogLevel.NAMES:
    setattr(LogLevel, _name, LogLevel(_name))
