"""The server's rules for webhook endpoints, as resolvers take them (``Context.webhooks``):
whether a URL may be delivered to, and how long a rotated-out secret still signs."""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit


async def _syntax_only(url: str) -> str | None:
    # Without the server's rules (which resolve the host and judge every address, IPv6
    # forms that carry an IPv4 address included), an address literal is not judged here:
    # it is refused.
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        return "an https URL is needed"
    try:
        ipaddress.ip_address(parts.hostname)
    except ValueError:
        return None
    return "an address needs the server's address rules"


@dataclass(frozen=True, slots=True)
class WebhookRules:
    """The server's rules for endpoints: why a URL may not be delivered to (None: it may),
    and how long a rotated-out secret still signs."""

    check_url: Callable[[str], Awaitable[str | None]] = field(default=_syntax_only)
    grace_seconds: float = 86400.0


DEFAULT_RULES = WebhookRules()
