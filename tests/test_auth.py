"""Bearer tokens: the tokens `mint` and `comments token` make pass the configured rules."""

from __future__ import annotations

import jwt
import pytest

from resolvers.auth import ALGORITHM, TokenRules, authenticate, mint
from resolvers.errors import Unauthenticated
from server.cli import main
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


def test_the_token_command_uses_the_configured_claims(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JWT_ISSUER", ISSUER)
    monkeypatch.setenv("JWT_AUDIENCE", AUDIENCE)
    assert main(["token", "ann", "--secret", SECRET, "--hours", "2"]) == 0
    token = capsys.readouterr().out.strip()
    claims = jwt.decode(token, SECRET, algorithms=[ALGORITHM], audience=AUDIENCE)
    assert (claims["iss"], claims["aud"], claims["exp"] - claims["iat"]) == (
        ISSUER,
        AUDIENCE,
        7200,
    )
    assert authenticate(f"Bearer {token}", STRICT).author_id == "ann"


def test_the_token_command_refuses_a_lifetime_the_server_would(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JWT_MAX_LIFETIME", "3600")
    assert main(["token", "ann", "--secret", SECRET, "--hours", "2"]) == 2
    assert "at most 1 h" in capsys.readouterr().err
