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


# --- rotating the secret --------------------------------------------------------------

NEW_SECRET = "the-secret-after-the-rotation-" + "0123456789abcdef" * 2


def test_tokens_of_the_previous_secret_hold_while_it_is_configured() -> None:
    rotating = TokenRules(NEW_SECRET, previous_secret=SECRET)
    old, new = mint(SECRET, "ann"), mint(NEW_SECRET, "bob")
    assert authenticate(f"Bearer {old}", rotating).author_id == "ann"
    assert authenticate(f"Bearer {new}", rotating).author_id == "bob"
    # Once the previous secret is taken away, its tokens are refused like any forgery.
    with pytest.raises(Unauthenticated, match="the token is not valid"):
        authenticate(f"Bearer {old}", TokenRules(NEW_SECRET))
    forged = mint("a-secret-neither-of-them-" + "x" * 32, "eve")
    with pytest.raises(Unauthenticated, match="the token is not valid"):
        authenticate(f"Bearer {forged}", rotating)


def test_the_previous_secret_changes_no_other_rule() -> None:
    # Signed with the previous secret, a token must still meet the claims' rules.
    rotating = TokenRules(NEW_SECRET, issuer=ISSUER, audience=AUDIENCE, previous_secret=SECRET)
    with pytest.raises(Unauthenticated, match="no iss claim"):
        authenticate(f"Bearer {mint(SECRET, 'ann')}", rotating)
    elsewhere = mint(SECRET, "ann", issuer="https://other.example", audience=AUDIENCE)
    with pytest.raises(Unauthenticated, match="issuer"):
        authenticate(f"Bearer {elsewhere}", rotating)


def test_a_previous_secret_needs_a_current_one() -> None:
    with pytest.raises(ValueError, match="previous secret"):
        TokenRules(previous_secret=SECRET)
    assert SECRET not in repr(TokenRules(NEW_SECRET, previous_secret=SECRET))
