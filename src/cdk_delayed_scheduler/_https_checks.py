"""Checks of ``targets.HttpsEndpoint``'s arguments: the URL, the extra headers, the timeout and the
signing secret. Each error names the prop and the rule; unresolved tokens are left to deploy time.

The header names the runtime sets on every request, and the timeout's bounds, are ``contract.json``'s
``webhook`` section."""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional
from urllib.parse import urlsplit

from aws_cdk import Duration, Token, Tokenization

from ._contract import contract
from ._target_checks import wrapper_hint
from ._validation import check_duration, check_range, check_whole_seconds, seconds

#: RFC 7230's ``token``: the characters a header name is made of.
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
#: A header value the runtime can send as it is: printable ASCII, spaces and tabs (no CR, LF or other
#: control character, which would end the header or smuggle another one).
_HEADER_VALUE = re.compile(r"^[\t\x20-\x7e]*$")
#: The most the extra headers may add to each request, counted as sent (``Name: value`` and CRLF, in
#: bytes). They travel in the dispatcher's ``TARGETS`` environment variable, and Lambda allows 4 KiB
#: of environment variables in all.
MAX_HEADERS_BYTES = 2048
#: The longest URL taken (what most servers and proxies accept in a request line).
MAX_URL_LENGTH = 2048
#: Why a URL must be https://, in its refusals.
_HTTPS_ONLY = "only https:// is delivered to (a signed request must not travel in clear text)"
#: Headers that frame the request, which the runtime's HTTP client writes itself.
_FRAMING_HEADERS = ("Content-Length", "Transfer-Encoding", "Connection", "Host")


def reserved_headers() -> tuple[str, ...]:
    """The header names the runtime sets on every request, which extra headers may not set:
    ``Content-Type``, the signature and the envelope's ``Scheduler-*`` headers (the contract's), and the
    request's framing. Any other ``Scheduler-`` name is reserved too."""
    return (*contract.WEBHOOK.own_headers(), *_FRAMING_HEADERS)


def _reserved_prefix() -> str:
    """``Scheduler-``: what the contract's own header names begin with."""
    return contract.WEBHOOK.signature_header.split("-", 1)[0] + "-"


def check_url(url: Any) -> None:
    """``url`` is an absolute ``https://`` URL with a host, without user information or a fragment."""
    if not isinstance(url, str):
        raise ValueError(f"url: must be a string, got {type(url).__name__}")
    rule = "an https:// URL with a host, without user information or a fragment"
    if Token.is_unresolved(url):
        # judged at deploy, but for the scheme when the text before the first token names one
        first = Tokenization.reverse_string(url).first_value
        scheme, named, _ = str(first).partition("://")
        if named and not Token.is_unresolved(first) and scheme.lower() != "https":
            raise ValueError(f"url: must be {rule}: {_HTTPS_ONLY}; got {scheme}:// followed by a token")
        return
    if len(url) > MAX_URL_LENGTH or any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7f for c in url):
        raise ValueError(f"url: must be {rule}, at most {MAX_URL_LENGTH} characters without spaces or control "
                         f"characters, got {url[:80]!r}")
    parts = urlsplit(url)
    try:
        parts.port
    except ValueError:
        raise ValueError(f"url: must be {rule}; its port is not a number from 0 to 65535, got {url!r}") from None
    if parts.scheme != "https" or not parts.hostname or "@" in parts.netloc or "#" in url:
        why = (_HTTPS_ONLY if parts.scheme != "https" else "it has no host" if not parts.hostname
               else "user information (user:password@) is not sent; the signature authenticates the request"
               if "@" in parts.netloc else "a fragment (#...) is never sent")
        raise ValueError(f"url: must be {rule}: {why}; got {url!r}")


def check_headers(headers: Optional[Mapping[str, str]]) -> None:
    """Extra headers: names are RFC 7230 tokens, none of the runtime's own nor twice; values printable
    ASCII; all of them at most ``MAX_HEADERS_BYTES`` as sent."""
    if headers is None:
        return
    if not isinstance(headers, Mapping):
        raise ValueError(f"headers: must be a mapping of header names to values, got {type(headers).__name__}")
    reserved = {name.lower(): name for name in reserved_headers()}
    prefix = _reserved_prefix()
    seen: set[str] = set()
    size = 0
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(f"headers: names and values must be strings, got {name!r}: {type(value).__name__}")
        size += len(name.encode()) + len(value.encode()) + len(": \r\n")
        if not Token.is_unresolved(name):
            if not _HEADER_NAME.match(name):
                raise ValueError(f"headers: {name!r} is not a header name (RFC 7230: letters, digits and "
                                 "!#$%&'*+-.^_`|~)")
            if name.lower() in reserved or name.lower().startswith(prefix.lower()):
                ours = reserved.get(name.lower(), f"every {prefix}* header")
                raise ValueError(f"headers: {name!r} is set by the scheduler on every request ({ours}); the "
                                 f"scheduler's own are {', '.join(reserved.values())} and any {prefix}* name")
            if name.lower() in seen:
                raise ValueError(f"headers: {name!r} is given twice (header names are case-insensitive)")
            seen.add(name.lower())
        if not Token.is_unresolved(value) and not _HEADER_VALUE.match(value):
            raise ValueError(f"headers: the value of {name!r} must be printable ASCII, spaces and tabs, without "
                             "CR, LF or other control characters")
    if size > MAX_HEADERS_BYTES:
        raise ValueError(f"headers: must be at most {MAX_HEADERS_BYTES} bytes in all as sent (name, ': ', value "
                         f"and CRLF each; they are kept in the dispatcher's environment), got {size}")


def check_timeout(timeout: Any) -> None:
    """Whole seconds within the contract's ``webhook.timeoutSeconds`` bounds."""
    check_duration("timeout", timeout)
    check_whole_seconds("timeout", timeout)
    bounds = contract.WEBHOOK.timeout_seconds
    check_range("timeout", seconds(timeout), bounds.min, bounds.max, unit="seconds")


def default_timeout() -> Duration:
    """The contract's default request timeout (10 seconds)."""
    default = contract.WEBHOOK.timeout_seconds.default
    if default is None:
        raise KeyError("contract.json's webhook.timeoutSeconds has no default")
    return Duration.seconds(default)


def check_secret(secret: Any) -> None:
    """A Secrets Manager secret (``aws_secretsmanager.ISecret``)."""
    if not (hasattr(secret, "secret_arn") and hasattr(secret, "grant_read")):
        raise ValueError(f"signing_secret: must be a Secrets Manager secret (aws_secretsmanager.ISecret), got "
                         f"{type(secret).__name__}{wrapper_hint(secret)}")
