"""Where a token's claims are: the paths of the subject, display name, roles, purchases and
incentivized products,
and which of the login provider's role names are this API's roles.

A path is either dotted, ``realm_access.roles`` (each dot goes one object down; a colon is
an ordinary character, so ``cognito:groups`` is one claim), or a JSON pointer (RFC 6901)
when it starts with ``/``, for claim names that hold dots or slashes themselves:
``/https:~1~1shop.example~1roles`` is the top-level claim ``https://shop.example/roles``
(``~1`` stands for ``/`` and ``~0`` for ``~``).
"""

from __future__ import annotations

from dataclasses import dataclass

# Dotted paths go no deeper than this; no provider nests its claims further.
PATH_DEPTH_MAX = 8


@dataclass(frozen=True, slots=True)
class ClaimPath:
    """One claim's place in the token, checked when made (``ValueError`` when it is not a
    path)."""

    text: str

    def __post_init__(self) -> None:
        _steps(self.text)

    def find(self, claims: dict[str, object]) -> object | None:
        """The claim's value, or None when the token has none there."""
        value: object = claims
        for step in _steps(self.text):
            if not isinstance(value, dict) or step not in value:
                return None
            value = value[step]
        return value


def _steps(text: str) -> list[str]:
    if text.startswith("/"):
        steps = [s.replace("~1", "/").replace("~0", "~") for s in text[1:].split("/")]
    else:
        steps = text.split(".")
    if not text or not all(steps) or len(steps) > PATH_DEPTH_MAX:
        raise ValueError(
            f"a claim path is a dotted path (realm_access.roles) or a JSON pointer "
            f"(/https:~1~1shop.example~1roles) of at most {PATH_DEPTH_MAX} non-empty names"
        )
    return steps


@dataclass(frozen=True, slots=True)
class ClaimMap:
    """Where the claims this API reads are, and the provider's names of its two roles."""

    subject: ClaimPath = ClaimPath("sub")
    name: ClaimPath = ClaimPath("name")
    roles: ClaimPath = ClaimPath("roles")
    purchases: ClaimPath = ClaimPath("purchases")
    # Products whose review the viewer is given something for (a sampling campaign's
    # tokens): a comment on one is incentivized, whatever the author says.
    incentivized: ClaimPath = ClaimPath("incentivized")
    # The provider's role (or group) names that make a viewer a moderator, a merchant.
    moderator_role: str = "moderator"
    merchant_role: str = "merchant"
