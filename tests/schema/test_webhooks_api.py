"""Moderators and merchants manage webhook endpoints through the API: the secret shown
once, changes from the version read, URLs refused after resolution in production
posture, a bounded number per shop; anyone else is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from resolvers.auth import mint
from storage.engine.table import TableRef
from storage.model.webhooks import ENDPOINTS_MAX
from tests.api_helpers import SECRET, Api, running_api
from tests.helpers import own_table
from tests.server.webhooks.rig import endpoint

MERCHANT = mint(SECRET, "shop", roles=["merchant"])
MODERATOR = mint(SECRET, "mod", roles=["moderator"])
SHOPPER = mint(SECRET, "shopper")

CREATE = """mutation($i: CreateWebhookEndpointInput!) {
  createWebhookEndpoint(input: $i) {
    endpoint { id url events ratings productIds enabled version signingSecrets }
    secret
    userErrors { field code message }
  }
}"""
UPDATE = """mutation($i: UpdateWebhookEndpointInput!) {
  updateWebhookEndpoint(input: $i) {
    endpoint { id ratings enabled version }
    userErrors { field code }
  }
}"""
ROTATE = """mutation($i: WebhookEndpointVersionInput!) {
  rotateWebhookSecret(input: $i) { endpoint { version signingSecrets } secret userErrors { code } }
}"""
DELETE = """mutation($i: WebhookEndpointVersionInput!) {
  deleteWebhookEndpoint(input: $i) { deletedId userErrors { field code } }
}"""
LIST = "{ webhookEndpoints { id url version signingSecrets } }"


@pytest.fixture(scope="module")
async def api(table: TableRef) -> AsyncIterator[Api]:
    own = await own_table(table, "hooksapi")
    # Production posture's rules for URLs (loopback refused), whatever else it needs.
    async with running_api(own.client, own.name, webhook_allow_loopback=False) as running:
        yield running


async def test_register_change_rotate_delete(api: Api) -> None:
    url = "https://93.184.215.14/hooks/reviews"
    refused = await api.gql(CREATE, {"i": {"url": url}}, SHOPPER)
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    made = (await api.data(CREATE, {"i": {"url": url, "ratings": [1, 2]}}, MERCHANT))[
        "createWebhookEndpoint"
    ]
    assert made["userErrors"] == []
    assert made["secret"].startswith("whsec_")
    endpoint = made["endpoint"]
    assert endpoint["events"] == [
        "AUTHOR_ERASED",
        "COMMENT_PUBLISHED",
        "COMMENT_REMOVED",
        "COMMENT_REPLIED",
        "COMMENT_UPDATED",
    ]
    assert endpoint["ratings"] == [1, 2]
    assert endpoint["signingSecrets"] == 1
    listed = (await api.data(LIST, {}, MODERATOR))["webhookEndpoints"]
    assert [e["id"] for e in listed] == [endpoint["id"]]
    assert made["secret"] not in str(listed)
    stale = {"id": endpoint["id"], "version": 7, "enabled": False}
    changed = (await api.data(UPDATE, {"i": stale}, MERCHANT))["updateWebhookEndpoint"]
    assert changed["userErrors"] == [{"field": ["input", "version"], "code": "CHANGED"}]
    fresh = {"id": endpoint["id"], "version": 1, "ratings": [], "enabled": False}
    changed = (await api.data(UPDATE, {"i": fresh}, MERCHANT))["updateWebhookEndpoint"]
    assert changed["endpoint"] == {
        "id": endpoint["id"],
        "ratings": [],
        "enabled": False,
        "version": 2,
    }
    rotated = (await api.data(ROTATE, {"i": {"id": endpoint["id"], "version": 2}}, MODERATOR))[
        "rotateWebhookSecret"
    ]
    assert rotated["secret"].startswith("whsec_")
    assert rotated["secret"] != made["secret"]
    assert rotated["endpoint"] == {"version": 3, "signingSecrets": 2}
    gone = (await api.data(DELETE, {"i": {"id": endpoint["id"], "version": 3}}, MERCHANT))[
        "deleteWebhookEndpoint"
    ]
    assert gone == {"deletedId": endpoint["id"], "userErrors": []}
    assert (await api.data(LIST, {}, MERCHANT))["webhookEndpoints"] == []


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/hook",
        "https://localhost/hook",
        "https://10.0.0.8/hook",
        "https://169.254.169.254/latest",
        "https://[::ffff:127.0.0.1]/hook",
        "http://93.184.215.14/hook",
        "not a url",
    ],
)
async def test_undeliverable_urls_are_refused_at_registration(api: Api, url: str) -> None:
    answer = (await api.data(CREATE, {"i": {"url": url}}, MERCHANT))["createWebhookEndpoint"]
    assert answer["endpoint"] is None
    assert answer["secret"] is None
    assert [(e["field"], e["code"]) for e in answer["userErrors"]] == [
        (["input", "url"], "INVALID")
    ]
    assert (await api.data(LIST, {}, MERCHANT))["webhookEndpoints"] == []


async def test_every_problem_at_once_and_the_bound(table: TableRef) -> None:
    own = await own_table(table, "hooksbound")
    async with running_api(own.client, own.name) as api:
        bad = {"url": "https://93.184.215.14/", "events": [], "ratings": [0], "productIds": ["a b"]}
        answer = (await api.data(CREATE, {"i": bad}, MERCHANT))["createWebhookEndpoint"]
        fields = sorted(tuple(e["field"]) for e in answer["userErrors"])
        assert fields == [("input", "events"), ("input", "productIds", "0"), ("input", "ratings")]
        for n in range(ENDPOINTS_MAX - 1):  # all but the last straight to storage
            await endpoint(own, f"https://93.184.215.14/{n}")
        ok = await api.data(CREATE, {"i": {"url": "https://93.184.215.14/last"}}, MERCHANT)
        assert ok["createWebhookEndpoint"]["userErrors"] == []
        over = await api.data(CREATE, {"i": {"url": "https://93.184.215.14/x"}}, MERCHANT)
        assert over["createWebhookEndpoint"]["userErrors"][0]["code"] == "LIMIT_REACHED"
        assert len((await api.data(LIST, {}, MERCHANT))["webhookEndpoints"]) == ENDPOINTS_MAX
