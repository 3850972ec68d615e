"""Tokens checked with a login provider's published keys (JWKS): a key server on loopback,
rotation, unknown keys, algorithm confusion, a set that cannot be refreshed, fetch bounds,
claim paths of real providers' shapes, and author ids that do not depend on the token's
source. Fetches are counted and the clock is the test's: nothing waits for real time but
the hanging endpoint's bounded timeout."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import httpx
import jwt
import pytest
import uvicorn
import websockets
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from pydantic import ValidationError
from websockets.typing import Subprotocol

from resolvers.auth import TokenRules, Viewer, authenticate, mint
from resolvers.authors import public_author_id
from resolvers.claims import ClaimMap, ClaimPath
from resolvers.context import make_context
from resolvers.errors import Unauthenticated
from resolvers.keys import KeySet, parse_key_set
from server.http.app import create_app
from server.jwks import FetchLimits, KeyStore
from server.runtime import open_worker, prepare
from server.settings import Settings
from storage.engine.table import TableRef

ISSUER = "https://login.shop.example/"
AUDIENCE = "comments-api"
AUTHOR_ID_KEY = "author-id-key-" + "0123456789abcdef" * 2
OLD_SECRET = "the-old-hs256-secret-" + "fedcba9876543210" * 2


# --- keys and tokens ------------------------------------------------------------------


@dataclass(frozen=True)
class Signer:
    kid: str
    alg: str
    private: Any

    def jwk(self) -> dict[str, Any]:
        public = self.private.public_key()
        algorithm: dict[str, Any] = {
            "RS256": RSAAlgorithm,
            "ES256": ECAlgorithm,
            "EdDSA": OKPAlgorithm,
        }
        made = cast(dict[str, Any], algorithm[self.alg].to_jwk(public, as_dict=True))
        return {**made, "kid": self.kid, "alg": self.alg, "use": "sig"}

    def token(self, sub: str = "ann", *, kid: str | None = "", **claims: object) -> str:
        now = int(time.time())
        body = {"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600}
        headers = {} if kid is None else {"kid": kid or self.kid}
        return jwt.encode({**body, **claims}, self.private, algorithm=self.alg, headers=headers)


def rsa_signer(kid: str = "rsa-1") -> Signer:
    return Signer(kid, "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


def ec_signer(kid: str = "ec-1") -> Signer:
    return Signer(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


def ed_signer(kid: str = "ed-1") -> Signer:
    return Signer(kid, "EdDSA", ed25519.Ed25519PrivateKey.generate())


@pytest.fixture(scope="module")
def rsa_key() -> Signer:
    return rsa_signer()


@pytest.fixture(scope="module")
def ec_key() -> Signer:
    return ec_signer()


@pytest.fixture(scope="module")
def ed_key() -> Signer:
    return ed_signer()


# --- a key server on loopback --------------------------------------------------------


@dataclass
class Published:
    """What the key server answers, and how many requests it had."""

    keys: list[dict[str, Any]] = field(default_factory=list)
    mode: str = "ok"  # ok, down (503), hang, huge
    requests: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    sent: int = 0  # bytes of the huge answer the server managed to hand to its socket


class KeyServer(ThreadingHTTPServer):
    daemon_threads = True
    published: Published


class Handler(BaseHTTPRequestHandler):
    server: KeyServer

    def do_GET(self) -> None:
        state = self.server.published
        state.requests += 1
        if state.mode == "down":
            self.send_error(503)
            return
        if state.mode == "hang":
            state.release.wait(10)
            return
        if state.mode == "huge":
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(10 * 1024 * 1024))
            self.end_headers()
            chunk = b" " * 65536
            try:
                for _ in range(160):  # 10 MiB
                    self.wfile.write(chunk)
                    state.sent += len(chunk)
            except OSError:
                pass  # the client hung up, as it should
            return
        body = json.dumps({"keys": state.keys}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def key_server() -> Iterator[tuple[str, Published]]:
    server = KeyServer(("127.0.0.1", 0), Handler)
    server.published = Published()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield (
            f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json",
            (server.published),
        )
    finally:
        server.published.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def rules(keys: KeyStore | KeySet | Any, claims: ClaimMap | None = None) -> TokenRules:
    source = keys if isinstance(keys, KeyStore) else Fixed(keys)
    return TokenRules(issuer=ISSUER, audience=AUDIENCE, keys=source, claims=claims or ClaimMap())


@dataclass
class Fixed:
    """A key source that holds one set (the protocol seam, no fetching)."""

    keys: KeySet

    def key_set(self) -> KeySet:
        return self.keys


def key_set(*signers: Signer) -> KeySet:
    return parse_key_set({"keys": [s.jwk() for s in signers]}, ("RS256", "ES256", "EdDSA"), 0)


def bearer(token: str) -> str:
    return f"Bearer {token}"


@pytest.fixture
async def store(key_server: tuple[str, Published]) -> AsyncIterator[tuple[KeyStore, Clock]]:
    url, _ = key_server
    clock = Clock()
    async with KeyStore(url, limits=FetchLimits(timeout=1.0), clock=clock) as opened:
        yield opened, clock


# --- accepted over real HTTP ----------------------------------------------------------


@pytest.mark.parametrize("kind", ["RS256", "ES256", "EdDSA"])
async def test_tokens_signed_by_a_published_key_are_accepted(
    kind: str,
    rsa_key: Signer,
    ec_key: Signer,
    ed_key: Signer,
    key_server: tuple[str, Published],
) -> None:
    url, published = key_server
    published.keys = [rsa_key.jwk(), ec_key.jwk(), ed_key.jwk()]
    signer = {"RS256": rsa_key, "ES256": ec_key, "EdDSA": ed_key}[kind]
    async with KeyStore(url) as keys:
        viewer = authenticate(bearer(signer.token("ann")), rules(keys))
        assert viewer.author_id == "ann"
        assert keys.fetches == published.requests == 1
        # Verified, not merely decoded: another key's signature under this kid fails.
        forged = rsa_signer(signer.kid) if kind != "RS256" else ec_signer(signer.kid)
        with pytest.raises(Unauthenticated):
            authenticate(bearer(forged.token("ann")), rules(keys))


async def test_a_rotated_key_is_found_with_one_fetch(
    rsa_key: Signer,
    key_server: tuple[str, Published],
    store: tuple[KeyStore, Clock],
) -> None:
    keys, clock = store
    _, published = key_server
    assert keys.fetches == 1  # at start-up, when nothing was published yet
    published.keys = [rsa_key.jwk()]
    clock.now += 60
    await keys.ensure(bearer(rsa_key.token()))
    assert authenticate(bearer(rsa_key.token()), rules(keys)).author_id == "ann"
    # The provider rotates: a new kid appears, the old one goes.
    new = ec_signer("ec-2")
    published.keys = [new.jwk()]
    clock.now += 60
    for _ in range(5):
        await keys.ensure(bearer(new.token()))
        assert authenticate(bearer(new.token()), rules(keys)).author_id == "ann"
    assert keys.fetches == published.requests == 3
    # The old key is gone from the set: its tokens are refused, without another fetch.
    await keys.ensure(bearer(rsa_key.token()))
    with pytest.raises(Unauthenticated, match="does not publish"):
        authenticate(bearer(rsa_key.token()), rules(keys))
    assert keys.fetches == 3


async def test_unknown_kids_cost_one_fetch_per_interval(
    rsa_key: Signer, key_server: tuple[str, Published], store: tuple[KeyStore, Clock]
) -> None:
    keys, clock = store
    _, published = key_server
    published.keys = [rsa_key.jwk()]
    clock.now += 60
    await keys.refresh()
    assert keys.fetches == 2
    stranger = rsa_signer("nobody")
    for n in range(20):
        token = stranger.token(kid=f"unknown-{n}")
        await keys.ensure(bearer(token))
        with pytest.raises(Unauthenticated):
            authenticate(bearer(token), rules(keys))
    assert keys.fetches == published.requests == 2  # all within the interval
    clock.now += keys.limits.min_interval
    for n in range(20):
        await keys.ensure(bearer(stranger.token(kid=f"later-{n}")))
    assert keys.fetches == published.requests == 3


# --- algorithm confusion -------------------------------------------------------------


def test_an_hs256_token_signed_with_the_public_key_is_refused(rsa_key: Signer) -> None:
    pem = rsa_key.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    now = int(time.time())
    claims = {"sub": "mallory", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600}
    header = {"alg": "HS256", "kid": rsa_key.kid, "typ": "JWT"}
    forged = _sign_hs256(header, claims, pem)
    with pytest.raises(Unauthenticated, match="algorithm"):
        authenticate(bearer(forged), rules(key_set(rsa_key)))


def test_alg_none_is_refused(rsa_key: Signer) -> None:
    now = int(time.time())
    claims = {"sub": "mallory", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600}
    unsigned = jwt.encode(claims, cast(Any, None), algorithm="none", headers={"kid": rsa_key.kid})
    with pytest.raises(Unauthenticated, match="algorithm"):
        authenticate(bearer(unsigned), rules(key_set(rsa_key)))


def test_a_token_whose_alg_does_not_match_its_key_is_refused(
    rsa_key: Signer, ec_key: Signer
) -> None:
    published = rules(key_set(rsa_key, ec_key))
    # An RS256 token naming the EC key, and an ES256 token naming the RSA key.
    with pytest.raises(Unauthenticated, match="does not match its key"):
        authenticate(bearer(rsa_key.token(kid=ec_key.kid)), published)
    with pytest.raises(Unauthenticated, match="does not match its key"):
        authenticate(bearer(ec_key.token(kid=rsa_key.kid)), published)


def test_a_key_whose_own_alg_differs_is_not_used(rsa_key: Signer) -> None:
    jwk = {**rsa_key.jwk(), "alg": "PS256"}
    keys = parse_key_set({"keys": [jwk]}, ("RS256", "PS256"), 0)
    published = TokenRules(
        issuer=ISSUER, audience=AUDIENCE, keys=Fixed(keys), algorithms=("RS256", "PS256")
    )
    with pytest.raises(Unauthenticated, match="does not match its key"):
        authenticate(bearer(rsa_key.token()), published)


def test_a_token_without_kid_needs_a_set_of_one_key(rsa_key: Signer, ec_key: Signer) -> None:
    token = rsa_key.token(kid=None)
    assert authenticate(bearer(token), rules(key_set(rsa_key))).author_id == "ann"
    with pytest.raises(Unauthenticated, match="names no key"):
        authenticate(bearer(token), rules(key_set(rsa_key, ec_key)))


def test_an_algorithm_off_the_allow_list_is_refused(ed_key: Signer) -> None:
    published = TokenRules(
        issuer=ISSUER, audience=AUDIENCE, keys=Fixed(key_set(ed_key)), algorithms=("RS256",)
    )
    with pytest.raises(Unauthenticated, match="algorithm"):
        authenticate(bearer(ed_key.token()), published)


def test_issuer_and_audience_are_checked(rsa_key: Signer) -> None:
    with pytest.raises(Unauthenticated, match="issuer"):
        authenticate(bearer(rsa_key.token(iss="https://elsewhere/")), rules(key_set(rsa_key)))
    with pytest.raises(Unauthenticated, match="audience"):
        authenticate(bearer(rsa_key.token(aud="another-app")), rules(key_set(rsa_key)))
    with pytest.raises(ValueError, match="issuer and audience"):
        TokenRules(keys=Fixed(key_set(rsa_key)), issuer=ISSUER)


def _sign_hs256(header: dict[str, Any], claims: dict[str, Any], secret: bytes) -> str:
    # PyJWT itself refuses a PEM as an HMAC secret; the attacker's library would not.
    import base64
    import hashlib
    import hmac

    def part(value: bytes) -> str:
        return base64.urlsafe_b64encode(value).rstrip(b"=").decode()

    head = part(json.dumps(header).encode()) + "." + part(json.dumps(claims).encode())
    signature = hmac.new(secret, head.encode(), hashlib.sha256).digest()
    return head + "." + part(signature)


# --- a set that cannot be refreshed, and fetch bounds ---------------------------------


async def test_a_set_past_its_maximum_age_refuses_tokens(
    rsa_key: Signer,
    key_server: tuple[str, Published],
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, published = key_server
    published.keys = [rsa_key.jwk()]
    clock = Clock()
    async with KeyStore(url, clock=clock) as keys:
        published.mode = "down"
        clock.now += keys.limits.cache_seconds + 1
        with caplog.at_level(logging.WARNING, "comments.server"):
            assert not await keys.refresh()
        assert "HTTP 503" in caplog.text
        assert url.rpartition("/")[0] in caplog.text
        # Stale but younger than the maximum: still served.
        assert authenticate(bearer(rsa_key.token()), rules(keys)).author_id == "ann"
        clock.now = 1000.0 + keys.limits.max_age + 1
        assert not await keys.refresh()
        with pytest.raises(Unauthenticated, match="could not be refreshed"):
            authenticate(bearer(rsa_key.token()), rules(keys))
        # Once the provider answers again, so do tokens.
        published.mode = "ok"
        clock.now += keys.limits.min_interval
        assert await keys.refresh()
        assert authenticate(bearer(rsa_key.token()), rules(keys)).author_id == "ann"


async def test_a_hanging_endpoint_is_given_up_on_within_the_timeout(
    key_server: tuple[str, Published], caplog: pytest.LogCaptureFixture
) -> None:
    url, published = key_server
    published.mode = "hang"
    limits = FetchLimits(timeout=0.3)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, "comments.server"):
        async with KeyStore(url, limits=limits) as keys:
            assert keys.fetches == 1
            with pytest.raises(Unauthenticated, match="not available"):
                keys.key_set()
    assert "no answer within 0.3 s" in caplog.text
    assert time.monotonic() - started < 5  # the timeout, with room for a loaded machine


async def test_a_huge_answer_is_cut_off_at_the_byte_cap(
    key_server: tuple[str, Published], caplog: pytest.LogCaptureFixture
) -> None:
    url, published = key_server
    published.mode = "huge"
    limits = FetchLimits(max_bytes=256 * 1024)
    with caplog.at_level(logging.WARNING, "comments.server"):
        async with KeyStore(url, limits=limits) as keys:
            assert keys.fetches == 1
            # Read in network chunks: the cap and at most one chunk past it.
            assert limits.max_bytes < keys.bytes_read <= limits.max_bytes + 65536
            with pytest.raises(Unauthenticated):
                keys.key_set()
    assert "exceeds 262144 bytes" in caplog.text


async def test_an_answer_that_is_no_key_set_keeps_the_held_one(
    rsa_key: Signer, key_server: tuple[str, Published], store: tuple[KeyStore, Clock]
) -> None:
    keys, clock = store
    _, published = key_server
    published.keys = [rsa_key.jwk()]
    clock.now += 60
    assert await keys.refresh()
    # Keys that are not keys, of other types, for encryption, or private: none is used.
    private = {**rsa_key.jwk(), "d": "AQAB"}
    published.keys = [{"kty": "EC"}, {"kty": "oct", "k": "c2VjcmV0"}, private, "x"]  # type: ignore[list-item]
    clock.now += 60
    # Not taken in place of the keys held: a broken answer signs no one out.
    assert not await keys.refresh()
    assert authenticate(bearer(rsa_key.token()), rules(keys)).author_id


def test_too_many_keys_are_refused_whole(rsa_key: Signer) -> None:
    with pytest.raises(ValueError, match="more than"):
        parse_key_set({"keys": [rsa_key.jwk()] * 33}, ("RS256",), 0)


async def test_a_mock_transport_fetch_is_counted(rsa_key: Signer) -> None:
    calls = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        # A stream, as the network gives: the store reads raw bytes as they come.
        body = json.dumps({"keys": [rsa_key.jwk()]}).encode()
        return httpx.Response(200, stream=httpx.ByteStream(body))

    transport = httpx.MockTransport(answer)
    async with KeyStore("https://login.example/jwks", transport=transport) as keys:
        await keys.ensure(bearer(rsa_key.token()))
        assert authenticate(bearer(rsa_key.token()), rules(keys)).author_id == "ann"
    assert len(calls) == 1
    assert calls[0].headers["accept-encoding"] == "identity"


# --- claim paths of real providers ---------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "claims", "extra", "expected"),
    [
        (
            "keycloak",
            ClaimMap(
                roles=ClaimPath("realm_access.roles"),
                name=ClaimPath("preferred_username"),
                moderator_role="shop-moderator",
            ),
            {"realm_access": {"roles": ["offline_access", "shop-moderator"]}},
            {"moderator"},
        ),
        (
            "cognito",
            ClaimMap(roles=ClaimPath("cognito:groups"), moderator_role="Moderators"),
            {"cognito:groups": ["Moderators"]},
            {"moderator"},
        ),
        (
            "auth0",
            ClaimMap(
                roles=ClaimPath("/https:~1~1shop.example~1roles"),
                moderator_role="moderator",
                merchant_role="shop-admin",
            ),
            {"https://shop.example/roles": ["shop-admin"]},
            {"merchant"},
        ),
        (
            "okta",
            ClaimMap(roles=ClaimPath("groups"), moderator_role="Comment Moderators"),
            {"groups": ["Everyone", "Comment Moderators"]},
            {"moderator"},
        ),
        (
            "shopify",
            ClaimMap(),
            {},
            set(),
        ),
    ],
)
def test_claim_paths_map_provider_roles(
    rsa_key: Signer, provider: str, claims: ClaimMap, extra: dict[str, Any], expected: set[str]
) -> None:
    token = rsa_key.token("gid://shopify/Customer/42", **extra)
    viewer = authenticate(bearer(token), rules(key_set(rsa_key), claims))
    assert viewer.author_id == "gid://shopify/Customer/42"
    assert viewer.roles == expected
    # The same role name in the default place means nothing under these paths.
    if provider != "shopify":
        plain = rsa_key.token("x", roles=["moderator", "merchant"])
        assert authenticate(bearer(plain), rules(key_set(rsa_key), claims)).roles == (
            {"moderator", "merchant"} & {claims.moderator_role, claims.merchant_role}
            if claims.roles.text == "roles"
            else set()
        )


def test_nested_subject_name_and_purchases(rsa_key: Signer) -> None:
    claims = ClaimMap(
        subject=ClaimPath("customer.id"),
        name=ClaimPath("customer.display"),
        purchases=ClaimPath("/https:~1~1shop.example~1orders"),
    )
    token = rsa_key.token(
        "ignored",
        customer={"id": "c-7", "display": "Ann"},
        **cast(Any, {"https://shop.example/orders": ["sku-1"]}),
    )
    viewer = authenticate(bearer(token), rules(key_set(rsa_key), claims))
    assert viewer == Viewer("c-7", "Ann", frozenset(), frozenset({"sku-1"}))
    with pytest.raises(Unauthenticated, match=r"no customer\.id claim"):
        authenticate(bearer(rsa_key.token("x")), rules(key_set(rsa_key), claims))


@pytest.mark.parametrize("path", ["", ".", "a..b", "/", "//x", ".".join("a" * 9)])
def test_a_claim_path_must_be_one(path: str) -> None:
    with pytest.raises(ValueError, match="claim path"):
        ClaimPath(path)


# --- author ids do not depend on how tokens are checked -------------------------------


async def test_author_ids_stay_the_same_across_token_sources(rsa_key: Signer) -> None:
    table = TableRef(cast(Any, object()), "unused")

    def key_of(tokens: TokenRules, author_id_key: str | None) -> bytes:
        context = make_context(
            table,
            request_id="r",
            tokens=tokens,
            authorization=None,
            storage_timeout=1,
            author_id_secret=author_id_key,
        )
        return context.author_key

    before = key_of(TokenRules(OLD_SECRET), None)  # the old derivation: from JWT_SECRET
    # The remap of docs/sign-in.md: AUTHOR_ID_KEY set to the old JWT_SECRET keeps every id,
    # whether the secret then rotates or tokens come from the provider's keys.
    rotated = key_of(TokenRules("a-brand-new-secret-" + "x" * 32), OLD_SECRET)
    provider = key_of(rules(key_set(rsa_key)), OLD_SECRET)
    assert before == rotated == provider
    sub = authenticate(bearer(rsa_key.token("ann")), rules(key_set(rsa_key))).author_id
    hs_sub = authenticate(bearer(mint(OLD_SECRET, "ann")), TokenRules(OLD_SECRET)).author_id
    assert public_author_id(before, hs_sub) == public_author_id(provider, sub)
    # And with a key of its own, the ids are the same for both sources too.
    assert key_of(TokenRules(OLD_SECRET), AUTHOR_ID_KEY) == key_of(
        rules(key_set(rsa_key)), AUTHOR_ID_KEY
    )
    assert key_of(TokenRules(OLD_SECRET), AUTHOR_ID_KEY) != before


# --- settings ------------------------------------------------------------------------


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


JWKS: dict[str, Any] = {
    "dynamodb_endpoint_url": "http://unused.invalid",
    "jwt_jwks_url": "https://login.shop.example/.well-known/jwks.json",
    "jwt_issuer": ISSUER,
    "jwt_audience": AUDIENCE,
    "author_id_key": AUTHOR_ID_KEY,
}


def test_jwks_settings_are_accepted_in_production(environment: pytest.MonkeyPatch) -> None:
    settings = Settings(**JWKS, production=True)
    assert settings.jwt_algorithms == ["RS256", "ES256", "EdDSA"]
    assert settings.fetch_limits == FetchLimits()
    environment.setenv("JWT_ALGORITHMS", "ES256, EdDSA")
    environment.setenv("JWT_CLAIM_ROLES", "realm_access.roles")
    environment.setenv("JWT_ROLE_MODERATOR", "shop-moderator")
    settings = Settings(**JWKS)
    assert settings.jwt_algorithms == ["ES256", "EdDSA"]
    assert settings.claim_map.roles == ClaimPath("realm_access.roles")
    assert settings.claim_map.moderator_role == "shop-moderator"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"jwt_issuer": None}, "JWT_ISSUER and JWT_AUDIENCE"),
        ({"jwt_audience": None}, "JWT_ISSUER and JWT_AUDIENCE"),
        ({"author_id_key": None}, "AUTHOR_ID_KEY"),
        ({"author_id_key": "short"}, "AUTHOR_ID_KEY must be at least 32 bytes"),
        ({"jwt_secret": OLD_SECRET}, "set one of them"),
        ({"jwt_jwks_url": "http://login.shop.example/jwks"}, "https://"),
        ({"jwt_jwks_url": "http://localhost.evil.example/jwks"}, "https://"),
        # A user and password before a loopback-looking name: the host is evil.example.
        ({"jwt_jwks_url": "http://127.0.0.1:80@evil.example/jwks"}, "user or password"),
        ({"jwt_jwks_url": "http://localhost:@evil.example/jwks"}, "user or password"),
        ({"jwt_jwks_url": "https://user:secret@login.shop.example/jwks"}, "user or password"),
        ({"jwt_algorithms": ["HS256"]}, "JWT_ALGORITHMS"),
        ({"jwt_algorithms": ["RS256", "none"]}, "JWT_ALGORITHMS"),
        ({"jwt_claim_roles": "a..b"}, "claim path"),
    ],
)
def test_jwks_settings_refused(
    environment: pytest.MonkeyPatch, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(**{**JWKS, **change})


def test_loopback_http_is_allowed(environment: pytest.MonkeyPatch) -> None:
    url = "http://127.0.0.1:8080/jwks"
    assert Settings(**{**JWKS, "jwt_jwks_url": url}).jwt_jwks_url == url


# --- through the application ---------------------------------------------------------

VIEWER = "{ viewer { authorId roles } }"
QUEUE = "{ moderationQueue(first: 1) { __typename } }"


async def test_the_api_finds_a_rotated_key_before_checking_the_token(
    rsa_key: Signer, key_server: tuple[str, Published], environment: pytest.MonkeyPatch
) -> None:
    url, published = key_server
    published.keys = [rsa_key.jwk()]
    settings = Settings(
        **{**JWKS, "jwt_jwks_url": url},
        jwt_jwks_min_interval=1,
        jwt_role_moderator="shop-moderator",
        live_updates=False,
        gc_freeze=False,
        metrics="off",
    )
    app = create_app(settings, client=cast(Any, object()))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://api.test"
        ) as http,
    ):

        async def ask(token: str, query: str = VIEWER) -> dict[str, Any]:
            response = await http.post(
                "/graphql", json={"query": query}, headers={"authorization": bearer(token)}
            )
            body: dict[str, Any] = response.json()
            return body

        body = await ask(rsa_key.token(roles=["shop-moderator"]))
        assert body["data"]["viewer"]["roles"] == ["moderator"]
        assert published.requests == 1
        new = ed_signer("ed-rotated")
        published.keys = [new.jwk()]
        # The interval since start-up passes (1 s, the smallest the settings take).
        await asyncio.sleep(1.05)
        assert (await ask(new.token()))["data"]["viewer"] is not None
        assert published.requests == 2
        # The removed key's token: no viewer (read as anonymous), and what needs one refused.
        assert (await ask(rsa_key.token()))["data"]["viewer"] is None
        body = await ask(rsa_key.token(roles=["shop-moderator"]), QUEUE)
        assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
        assert published.requests == 2


async def test_connection_init_finds_a_rotated_key(
    rsa_key: Signer, key_server: tuple[str, Published], environment: pytest.MonkeyPatch
) -> None:
    url, published = key_server
    published.keys = [rsa_key.jwk()]
    settings = Settings(
        **{**JWKS, "jwt_jwks_url": url},
        jwt_jwks_min_interval=1,
        live_updates=False,
        gc_freeze=False,
        metrics="off",
    )
    app = create_app(settings, client=cast(Any, object()))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    try:
        for _ in range(1000):  # uvicorn says when it listens by a flag only
            if server.started:
                break
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        new = ec_signer("ec-rotated")
        published.keys = [new.jwk()]
        await asyncio.sleep(1.05)  # the interval since start-up's fetch (1 s, the least)
        closes = []
        for token in (new.token(), rsa_key.token()):
            async with websockets.connect(
                f"ws://127.0.0.1:{port}/graphql", subprotocols=[Subprotocol("graphql-transport-ws")]
            ) as socket:
                payload = {"authorization": bearer(token)}
                await socket.send(json.dumps({"type": "connection_init", "payload": payload}))
                try:
                    closes.append(json.loads(await socket.recv())["type"])
                except websockets.ConnectionClosed as exc:
                    closes.append(exc.rcvd.code if exc.rcvd else None)
        assert closes == ["connection_ack", 4403]
        assert published.requests == 2
    finally:
        server.should_exit = True
        await serving


async def test_workers_fetch_the_keys_themselves(
    rsa_key: Signer, key_server: tuple[str, Published], environment: pytest.MonkeyPatch
) -> None:
    url, published = key_server
    published.keys = [rsa_key.jwk()]
    settings = Settings(
        **{**JWKS, "jwt_jwks_url": url}, port=0, live_updates=False, create_table=False
    )
    # The parent shares no secret and prints no dev token; each worker holds its own keys.
    with prepare(settings) as prepared:
        assert prepared.settings.jwt_secret is None
        assert prepared.dev_tokens is None
        async with open_worker(prepared) as runtime:
            assert runtime.keys is not None
            assert runtime.tokens.keys is runtime.keys
            viewer = authenticate(bearer(rsa_key.token()), runtime.tokens)
            assert viewer.author_id == "ann"
    assert published.requests == 1


def test_two_keys_of_one_kid_check_the_token_of_their_own_alg(
    rsa_key: Signer, ec_key: Signer
) -> None:
    # An RSA and an EC key published under one kid: each token is checked with its own.
    shared_rsa, shared_ec = replace(rsa_key, kid="shared"), replace(ec_key, kid="shared")
    both = rules(key_set(shared_rsa, shared_ec))
    for signer in (shared_rsa, shared_ec):
        assert authenticate(bearer(signer.token()), both).author_id == "ann"


def test_a_key_for_other_operations_than_verifying_is_not_used(rsa_key: Signer) -> None:
    published = {"keys": [{**rsa_key.jwk(), "key_ops": ["encrypt"]}]}
    held = parse_key_set(published, ("RS256",), 0)
    assert held.keys == ()
    verifying = {"keys": [{**rsa_key.jwk(), "key_ops": ["verify"]}]}
    assert len(parse_key_set(verifying, ("RS256",), 0).keys) == 1


def test_a_providers_clock_may_run_a_little_ahead(rsa_key: Signer) -> None:
    now = int(time.time())
    held = rules(key_set(rsa_key))
    ahead = rsa_key.token(iat=now + 10, nbf=now + 10)
    assert authenticate(bearer(ahead), held).author_id == "ann"
    for far in (
        rsa_key.token(iat=now + 600, exp=now + 1200),
        rsa_key.token(nbf=now + 600, exp=now + 1200),
    ):
        with pytest.raises(Unauthenticated):
            authenticate(bearer(far), held)


def test_a_time_too_large_for_a_number_is_refused(rsa_key: Signer) -> None:
    # Signed as it is: a provider's bug must not become an internal error.
    huge = rsa_key.token(exp=10**4000)
    with pytest.raises(Unauthenticated, match="exp claim must be a number"):
        authenticate(bearer(huge), rules(key_set(rsa_key)))
