"""Bearer tokens: the tokens `mint` makes pass the configured rules."""

from __future__ import annotations

import pytest

from resolvers.auth import TokenRules, authenticate, mint
from resolvers.errors import Unauthenticated
from tests.api_helpers import SECRET

ISSUER = "https://auth.shop.example"
AUDIENCE = "comments-api"
STRICT = TokenRules(SECRET, issuer=ISSUER, audience=AUDIENCE)


def test_minted_tokens_carry_the_configured_issuer_and_audience() -> None:
    token = mint(SECRET, "ann", issuer=ISSUER, audience=AUDIENCE)
    assert authenticate(f"Bearer {token}", STRICT).author_id == "ann"
    with pytest.raises(Unauthenticated, match="no iss claim"):
        authenticate(f"Bearer {mint(SECRET, 'ann')}", STRICT)


def test_the_rules_never_print_the_secret() -> None:
    assert SECRET not in repr(STRICT)
