"""What moderators and the merchant role do with webhook endpoints: list them, register
one, change it, delete it, rotate its secret. Every change is made from the version its
author read (CHANGED otherwise); every problem of the input is reported at once; a
secret is returned only by the mutation that made it.

Whether a URL may be delivered to is the server's to say (it resolves the host and
checks every address: ``server.webhooks.transport``); it reaches resolvers as
``WebhookRules.check_url``. Without one, only https URLs whose host is a name or a public
address literal pass (nothing is resolved)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from resolvers.auth import Viewer
from resolvers.comments.rates import take_turn
from resolvers.comments.writes import viewer
from resolvers.context import Context
from resolvers.errors import Forbidden
from resolvers.user_errors import Checks, Problem, ProblemCode, Problems
from resolvers.webhook_rules import DEFAULT_RULES, WebhookRules
from storage.base.errors import InvalidInput
from storage.model import rules
from storage.model.webhooks import (
    FILTER_MAX,
    URL_MAX,
    Endpoint,
    EventType,
    SecretEntry,
    new_endpoint_id,
    new_secret,
    validate_endpoint_id,
)
from storage.reads.webhooks import list_endpoints
from storage.writes.rates import Family
from storage.writes.webhook_endpoints import (
    EndpointChanged,
    EndpointNotFound,
    TooManyEndpoints,
    create_endpoint,
    delete_endpoint,
    rotate_secret,
    update_endpoint,
)


def _staff(ctx: Context) -> Viewer:
    who = viewer(ctx)
    if not (who.is_moderator or who.is_merchant):
        raise Forbidden("only moderators and merchants may manage webhook endpoints")
    return who


def _rules(ctx: Context) -> WebhookRules:
    return ctx.webhooks or DEFAULT_RULES


async def endpoints(ctx: Context) -> list[Endpoint]:
    """The shop's endpoints (without their secrets' values, which the schema never shows)."""
    _staff(ctx)
    return await ctx.storage(list_endpoints(ctx.table))


@dataclass(frozen=True, slots=True)
class EndpointInput:
    """What a mutation asks to set; None: left as it is (create: the default)."""

    url: str | None = None
    events: list[str] | None = None
    product_ids: list[str] | None = None
    group_ids: list[str] | None = None
    ratings: list[int] | None = None
    enabled: bool | None = None


async def _checked(ctx: Context, given: EndpointInput, checks: Checks) -> dict[str, object]:
    """The fields ``given`` sets, each held to its rule; problems go to ``checks``."""
    out: dict[str, object] = {}
    at = ("input",)
    if given.url is not None:
        url = given.url.strip()
        if len(url) > URL_MAX:
            checks.problems.append(
                Problem((*at, "url"), f"at most {URL_MAX} characters", ProblemCode.TOO_LONG)
            )
        else:
            problem = await _rules(ctx).check_url(url)
            if problem is not None:
                checks.problems.append(
                    Problem((*at, "url"), f"not deliverable: {problem}", ProblemCode.INVALID)
                )
            out["url"] = url
    if given.events is not None:
        if not given.events:
            checks.problems.append(
                Problem((*at, "events"), "name at least one event type", ProblemCode.REQUIRED)
            )
        out["events"] = frozenset(EventType(e) for e in given.events)
    for name, values in (("productIds", given.product_ids), ("groupIds", given.group_ids)):
        if values is None:
            continue
        if len(values) > FILTER_MAX:
            checks.problems.append(
                Problem((*at, name), f"at most {FILTER_MAX} ids", ProblemCode.TOO_LONG)
            )
            continue
        valid = [
            checks.check((*at, name, str(i)), lambda v=v: rules.validate_product_id(v))  # type: ignore[misc]
            for i, v in enumerate(values)
        ]
        key = "product_ids" if name == "productIds" else "group_ids"
        out[key] = frozenset(v for v in valid if v is not None)
    if given.ratings is not None:
        bad = [r for r in given.ratings if r not in rules.RATINGS]
        if bad:
            checks.problems.append(
                Problem((*at, "ratings"), "ratings are 1 to 5", ProblemCode.INVALID)
            )
        out["ratings"] = frozenset(given.ratings)
    if given.enabled is not None:
        out["enabled"] = given.enabled
    return out


def _endpoint_id(raw: str, checks: Checks) -> str | None:
    try:
        return validate_endpoint_id(raw)
    except InvalidInput:
        checks.problems.append(Problem(("input", "id"), "no such endpoint", ProblemCode.NOT_FOUND))
        return None


def _storage_problem(exc: Exception) -> Problems:
    if isinstance(exc, EndpointNotFound):
        return Problems([Problem(("input", "id"), str(exc), ProblemCode.NOT_FOUND)])
    if isinstance(exc, EndpointChanged):
        return Problems([Problem(("input", "version"), str(exc), ProblemCode.CHANGED)])
    return Problems([Problem(None, str(exc), ProblemCode.LIMIT_REACHED)])


async def create(ctx: Context, given: EndpointInput) -> tuple[Endpoint, str]:
    """Register an endpoint; returns it and its secret (shown this once)."""
    who = _staff(ctx)
    checks = Checks()
    if given.url is None:
        checks.problems.append(Problem(("input", "url"), "a URL is needed", ProblemCode.REQUIRED))
    fields = await _checked(ctx, given, checks)
    checks.raise_any()
    await take_turn(ctx, who, Family.MODERATE)
    secret = new_secret()
    endpoint = Endpoint(
        endpoint_id=new_endpoint_id(),
        url=str(fields["url"]),
        events=fields.get("events", frozenset(EventType)),  # type: ignore[arg-type]
        product_ids=fields.get("product_ids", frozenset()),  # type: ignore[arg-type]
        group_ids=fields.get("group_ids", frozenset()),  # type: ignore[arg-type]
        ratings=fields.get("ratings", frozenset()),  # type: ignore[arg-type]
        enabled=bool(fields.get("enabled", True)),
        created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        secrets=(SecretEntry(secret),),
    )
    try:
        made = await ctx.storage(create_endpoint(ctx.table, endpoint))
    except TooManyEndpoints as exc:
        raise _storage_problem(exc) from exc
    return made, secret


async def update(ctx: Context, raw_id: str, version: int, given: EndpointInput) -> Endpoint:
    who = _staff(ctx)
    checks = Checks()
    endpoint_id = _endpoint_id(raw_id, checks)
    fields = await _checked(ctx, given, checks)
    checks.raise_any()
    assert endpoint_id is not None
    await take_turn(ctx, who, Family.MODERATE)
    try:
        return await ctx.storage(update_endpoint(ctx.table, endpoint_id, version, fields))
    except (EndpointNotFound, EndpointChanged) as exc:
        raise _storage_problem(exc) from exc


async def delete(ctx: Context, raw_id: str, version: int) -> str:
    who = _staff(ctx)
    checks = Checks()
    endpoint_id = _endpoint_id(raw_id, checks)
    checks.raise_any()
    assert endpoint_id is not None
    await take_turn(ctx, who, Family.MODERATE)
    try:
        await ctx.storage(delete_endpoint(ctx.table, endpoint_id, version))
    except (EndpointNotFound, EndpointChanged) as exc:
        raise _storage_problem(exc) from exc
    return endpoint_id


async def rotate(ctx: Context, raw_id: str, version: int) -> tuple[Endpoint, str]:
    who = _staff(ctx)
    checks = Checks()
    endpoint_id = _endpoint_id(raw_id, checks)
    checks.raise_any()
    assert endpoint_id is not None
    await take_turn(ctx, who, Family.MODERATE)
    grace = _rules(ctx).grace_seconds
    try:
        return await ctx.storage(
            rotate_secret(ctx.table, endpoint_id, version, grace_seconds=grace)
        )
    except (EndpointNotFound, EndpointChanged) as exc:
        raise _storage_problem(exc) from exc
