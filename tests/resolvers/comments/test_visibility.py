"""Who sees what of a comment's life, per role, through every field that can return a
comment: PENDING and REJECTED comments exist for their author and moderators only (null,
and NOT_FOUND in mutations, for everyone else, with no hint); moderation details for
moderators; the viewer's own comments and the queue through their own fields."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from strawberry import relay

from resolvers.auth import mint
from storage.engine.table import TableRef
from tests.api_helpers import SECRET, Api, running_api
from tests.helpers import own_product_id, own_table

ROLES = {
    "anonymous": None,
    "author": mint(SECRET, "writer", name="Writer", purchases=[]),
    "other": mint(SECRET, "someone", name="Someone"),
    "moderator": mint(SECRET, "mod", name="Mo", roles=["moderator"]),
    "merchant": mint(SECRET, "shop", name="The Shop", roles=["merchant"]),
}
SEES_UNPUBLISHED = {"author", "moderator"}

CREATE = """mutation($p: ID!, $r: Int!) {
  createComment(input: {productId: $p, rating: $r, language: "en", body: "text"}) {
    comment { commentId status verifiedPurchase } userErrors { code }
  }
}"""
MODERATE = """mutation($id: ID!, $d: ModerationDecision!, $n: String) {
  moderateComment(input: {id: $id, decision: $d, note: $n}) {
    comment { status moderation { decidedBy note reportCount } } userErrors { code }
  }
}"""
FIELDS = "commentId status moderationNote moderation { note decidedBy }"


@pytest.fixture(scope="module")
async def setup(table: TableRef) -> AsyncIterator[tuple[Api, Api, TableRef]]:
    """Two APIs over one table of this module's own: post- and pre-moderation."""
    own = await own_table(table, "vis")
    async with (
        running_api(own.client, own.name) as post,
        running_api(own.client, own.name, moderation="pre", report_threshold=2) as pre,
    ):
        yield post, pre, own


async def create(api: Api, product: str, rating: int = 4, who: str = "author") -> str:
    data = await api.data(CREATE, {"p": product, "r": rating}, ROLES[who])
    cid: str = data["createComment"]["comment"]["commentId"]
    return cid


async def by_every_field(api: Api, cid: str, token: str | None) -> list[Any]:
    """The comment as ``comment``, ``node`` and ``nodes`` return it."""
    gid = str(relay.GlobalID("Comment", cid))
    data = await api.data(
        "query($c: ID!, $g: ID!) { comment(commentId: $c) { commentId } "
        "node(id: $g) { ... on Comment { commentId } } nodes(ids: [$g]) { ... on Comment "
        "{ commentId } } }",
        {"c": cid, "g": gid},
        token,
    )
    return [data["comment"], data["node"], data["nodes"][0]]


async def test_a_pending_comment_has_no_edge_to_prepend(setup: tuple[Api, Api, TableRef]) -> None:
    post, pre, _ = setup
    query = (
        'mutation($p: ID!) { createComment(input: {productId: $p, rating: 2, language: "en", '
        'body: "b"}) { comment { status } commentEdge { cursor } } }'
    )
    waiting = await pre.data(query, {"p": own_product_id()}, ROLES["author"])
    assert waiting["createComment"] == {"comment": {"status": "PENDING"}, "commentEdge": None}
    shown = await post.data(query, {"p": own_product_id()}, ROLES["author"])
    assert shown["createComment"]["commentEdge"]["cursor"]


@pytest.mark.parametrize("role", list(ROLES))
async def test_pending_and_rejected_comments_exist_for_author_and_moderators_only(
    setup: tuple[Api, Api, TableRef], role: str
) -> None:
    post, pre, _ = setup
    product = own_product_id()
    pending = await create(pre, product)
    rejected = await create(post, own_product_id())
    await post.data(MODERATE, {"id": rejected, "d": "REJECT", "n": "off topic"}, ROLES["moderator"])
    published = await create(post, product)
    for cid in (pending, rejected):
        seen = await by_every_field(post, cid, ROLES[role])
        if role in SEES_UNPUBLISHED:
            assert seen == [{"commentId": cid}] * 3
        else:
            assert seen == [None, None, None]
    assert await by_every_field(post, published, ROLES[role]) == [{"commentId": published}] * 3
    # Listings hold the published comment only, whoever asks.
    listed = await post.data(
        "query($p: ID!) { product(productId: $p) { comments { totalCount nodes { commentId } } "
        "stats { total } } }",
        {"p": product},
        ROLES[role],
    )
    assert listed["product"]["comments"]["nodes"] == [{"commentId": published}]
    assert listed["product"]["comments"]["totalCount"] == 1
    assert listed["product"]["stats"]["total"] == 1


@pytest.mark.parametrize("role", list(ROLES))
async def test_moderation_details_for_moderators_and_the_note_for_the_author(
    setup: tuple[Api, Api, TableRef], role: str
) -> None:
    post, _, _ = setup
    cid = await create(post, own_product_id())
    await post.data(
        MODERATE, {"id": cid, "d": "REJECT", "n": "please rephrase"}, ROLES["moderator"]
    )
    data = await post.data(
        f"query($c: ID!) {{ comment(commentId: $c) {{ {FIELDS} }} }}", {"c": cid}, ROLES[role]
    )
    comment = data["comment"]
    if role not in SEES_UNPUBLISHED:
        assert comment is None
        return
    assert comment["status"] == "REJECTED"
    assert comment["moderationNote"] == "please rephrase"
    if role == "moderator":
        assert comment["moderation"] == {"note": "please rephrase", "decidedBy": "Mo"}
    else:
        assert comment["moderation"] is None


@pytest.mark.parametrize("role", list(ROLES))
async def test_a_note_on_an_approval_stays_with_the_moderators(
    setup: tuple[Api, Api, TableRef], role: str
) -> None:
    # The input's note is documented as shown to the author on a rejection; on an approval
    # it is the moderators' own ("approved, but watch this author").
    post, _, _ = setup
    cid = await create(post, own_product_id())
    await post.data(MODERATE, {"id": cid, "d": "APPROVE", "n": "watch them"}, ROLES["moderator"])
    data = await post.data(
        f"query($c: ID!) {{ comment(commentId: $c) {{ {FIELDS} }} }}", {"c": cid}, ROLES[role]
    )
    expected = "watch them" if role == "moderator" else None
    assert data["comment"]["moderationNote"] == expected


async def test_writes_on_an_unpublished_comment_answer_not_found_to_others(
    setup: tuple[Api, Api, TableRef],
) -> None:
    _, pre, _ = setup
    cid = await create(pre, own_product_id())
    attempts = {
        "other": [
            'updateComment(input: {id: "%s", body: "mine now"})',
            'deleteComment(input: {id: "%s"})',
            'reportComment(input: {id: "%s", reason: SPAM})',
        ],
        "merchant": [
            'replyToComment(input: {id: "%s", body: "thanks"})',
            'deleteReply(input: {id: "%s"})',
        ],
    }
    for role, fields in attempts.items():
        for field in fields:
            body = await pre.data(
                "mutation { m: " + field % cid + " { userErrors { code field } } }",
                token=ROLES[role],
            )
            assert body["m"]["userErrors"] == [{"code": "NOT_FOUND", "field": ["input", "id"]}]
    # The comment is untouched and still waits.
    seen = await pre.data(
        f'{{ comment(commentId: "{cid}") {{ status body }} }}', token=ROLES["author"]
    )
    assert seen["comment"] == {"status": "PENDING", "body": "text"}


async def test_the_queue_is_for_moderators(setup: tuple[Api, Api, TableRef]) -> None:
    _, pre, _ = setup
    cid = await create(pre, own_product_id())
    query = "{ moderationQueue(first: 100) { totalCount nodes { commentId status } } }"
    assert await pre.error_code(query) == "UNAUTHENTICATED"
    for role in ("author", "other", "merchant"):
        assert await pre.error_code(query, token=ROLES[role]) == "FORBIDDEN"
    data = await pre.data(query, token=ROLES["moderator"])
    queue = data["moderationQueue"]
    assert {"commentId": cid, "status": "PENDING"} in queue["nodes"]
    assert queue["totalCount"] >= len(queue["nodes"]) >= 1


async def test_viewer_sees_their_own_comments_in_every_status(
    setup: tuple[Api, Api, TableRef],
) -> None:
    post, pre, _ = setup
    sub = f"own-{own_product_id()}"
    mine = mint(SECRET, sub)
    made = []
    for api in (post, pre, post):
        data = await api.data(CREATE, {"p": own_product_id(), "r": 3}, mine)
        made.append(data["createComment"]["comment"]["commentId"])
    await post.data(MODERATE, {"id": made[2], "d": "REJECT"}, ROLES["moderator"])
    query = (
        "query($a: String) { viewer { authorId roles comments(first: 2, after: $a) { totalCount "
        "pageInfo { hasNextPage endCursor } nodes { commentId status } } } }"
    )
    first = (await post.data(query, {"a": None}, mine))["viewer"]
    assert first["authorId"] == sub
    assert first["roles"] == []
    assert first["comments"]["totalCount"] == 3
    assert [n["status"] for n in first["comments"]["nodes"]] == ["REJECTED", "PENDING"]
    assert [n["commentId"] for n in first["comments"]["nodes"]] == made[::-1][:2]
    cursor = first["comments"]["pageInfo"]["endCursor"]
    rest = (await post.data(query, {"a": cursor}, mine))["viewer"]["comments"]
    assert [n["commentId"] for n in rest["nodes"]] == [made[0]]
    assert rest["pageInfo"]["hasNextPage"] is False
    assert (await post.data("{ viewer { authorId } }"))["viewer"] is None
    bad = await post.gql("{ viewer { authorId } }", token="not-a-token")
    assert bad["data"]["viewer"] is None


async def test_reports_hide_a_comment_and_the_reporter_then_sees_null(
    setup: tuple[Api, Api, TableRef],
) -> None:
    post, pre, _ = setup  # pre: threshold 2
    product = own_product_id()
    cid = await create(post, product, rating=5)
    report = (
        'mutation { reportComment(input: {id: "%s", reason: SPAM}) '
        "{ comment { commentId } userErrors { code } } }"
    )
    first = await pre.data(report % cid, token=mint(SECRET, "r1"))
    assert first["reportComment"] == {"comment": {"commentId": cid}, "userErrors": []}
    again = await pre.data(report % cid, token=mint(SECRET, "r1"))
    assert again["reportComment"]["comment"] == {"commentId": cid}  # a repeat counts once
    own = await pre.data(report % cid, token=ROLES["author"])
    assert own["reportComment"]["userErrors"] == [{"code": "FORBIDDEN"}]
    second = await pre.data(report % cid, token=mint(SECRET, "r2"))
    assert second["reportComment"] == {"comment": None, "userErrors": []}
    data = await post.data(
        "query($p: ID!) { product(productId: $p) { stats { total } comments { totalCount } } "
        "topProducts(first: 100) { product { productId } } }",
        {"p": product},
    )
    assert data["product"]["stats"]["total"] == 0
    assert data["product"]["comments"]["totalCount"] == 0
    assert {"product": {"productId": product}} not in data["topProducts"]
    moderated = await post.data(
        f'{{ comment(commentId: "{cid}") {{ status moderation {{ reportCount reasons }} }} }}',
        token=ROLES["moderator"],
    )
    assert moderated["comment"] == {
        "status": "PENDING",
        "moderation": {"reportCount": 2, "reasons": ["SPAM"]},
    }


async def test_verified_purchases_come_from_the_token_and_filter(
    setup: tuple[Api, Api, TableRef],
) -> None:
    post, _, _ = setup
    product = own_product_id()
    buyer = mint(SECRET, "buyer", purchases=[product])
    bought = await post.data(CREATE, {"p": product, "r": 5}, buyer)
    assert bought["createComment"]["comment"]["verifiedPurchase"] is True
    other = await post.data(CREATE, {"p": product, "r": 5}, ROLES["other"])
    assert other["createComment"]["comment"]["verifiedPurchase"] is False
    data = await post.data(
        "query($p: ID!) { product(productId: $p) { all: stats { total } "
        "verified: stats(verifiedOnly: true) { total histogram { rating count } } "
        "comments(verifiedOnly: true) { totalCount nodes { commentId } } } }",
        {"p": product},
    )
    p = data["product"]
    assert p["all"]["total"] == 2
    assert p["verified"]["total"] == 1
    assert p["verified"]["histogram"][0] == {"rating": 5, "count": 1}
    assert p["comments"]["totalCount"] == 1
    assert p["comments"]["nodes"] == [
        {"commentId": bought["createComment"]["comment"]["commentId"]}
    ]


async def test_only_moderators_moderate_and_only_merchants_reply(
    setup: tuple[Api, Api, TableRef],
) -> None:
    post, _, _ = setup
    cid = await create(post, own_product_id())
    for role in ("author", "other", "merchant"):
        body = await post.gql(MODERATE, {"id": cid, "d": "REJECT"}, ROLES[role])
        assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    reply = (
        'mutation { replyToComment(input: {id: "%s", body: "Thank you!"}) '
        "{ comment { merchantReply { body author } } userErrors { code } } }"
    )
    for role in ("author", "other", "moderator"):
        body = await post.gql(reply % cid, token=ROLES[role])
        assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    done = await post.data(reply % cid, token=ROLES["merchant"])
    assert done["replyToComment"]["comment"]["merchantReply"] == {
        "body": "Thank you!",
        "author": "The Shop",
    }
    shown = await post.data(f'{{ comment(commentId: "{cid}") {{ merchantReply {{ body }} }} }}')
    assert shown["comment"]["merchantReply"] == {"body": "Thank you!"}


async def test_an_edit_through_the_api_moves_counters_and_reports_every_bad_field(
    setup: tuple[Api, Api, TableRef],
) -> None:
    post, pre, _ = setup
    product = own_product_id()
    made = await post.data(
        'mutation($p: ID!) { createComment(input: {productId: $p, rating: 5, language: "en", '
        'title: "Old", body: "b"}) { comment { commentId } } }',
        {"p": product},
        ROLES["author"],
    )
    cid = made["createComment"]["comment"]["commentId"]
    update = (
        "mutation($i: UpdateCommentInput!) { updateComment(input: $i) { comment { rating "
        "language title body status editedAt } userErrors { field code } } }"
    )
    bad = await post.data(
        update, {"i": {"id": cid, "rating": 9, "language": "x/y", "body": " "}}, ROLES["author"]
    )
    assert bad["updateComment"]["comment"] is None
    assert sorted(e["field"][1] for e in bad["updateComment"]["userErrors"]) == [
        "body",
        "language",
        "rating",
    ]
    other = await post.data(update, {"i": {"id": cid, "rating": 1}}, ROLES["other"])
    assert other["updateComment"]["userErrors"] == [{"field": None, "code": "FORBIDDEN"}]
    done = await post.data(
        update, {"i": {"id": cid, "rating": 2, "language": "DE", "title": None}}, ROLES["author"]
    )
    edited = done["updateComment"]["comment"]
    assert (edited["rating"], edited["language"], edited["title"], edited["body"]) == (
        2,
        "de",
        None,
        "b",
    )
    assert edited["status"] == "PUBLISHED"
    assert edited["editedAt"] is not None
    stats = await post.data(
        "query($p: ID!) { product(productId: $p) { all: stats { histogram { rating count } } "
        'de: stats(language: "de") { total } en: stats(language: "en") { total } } '
        "topProducts(first: 100) { product { productId } } }",
        {"p": product},
    )
    counts = {h["rating"]: h["count"] for h in stats["product"]["all"]["histogram"]}
    assert counts == {5: 0, 4: 0, 3: 0, 2: 1, 1: 0}
    assert (stats["product"]["de"]["total"], stats["product"]["en"]["total"]) == (1, 0)
    assert {"product": {"productId": product}} not in stats["topProducts"]
    # Under pre-moderation the edited comment waits again and leaves the counters.
    waiting = await pre.data(update, {"i": {"id": cid, "body": "again"}}, ROLES["author"])
    assert waiting["updateComment"]["comment"]["status"] == "PENDING"
    gone = await post.data(
        "query($p: ID!) { product(productId: $p) { stats { total } } }", {"p": product}
    )
    assert gone["product"]["stats"]["total"] == 0


@pytest.mark.parametrize("who", sorted(set(ROLES) - SEES_UNPUBLISHED))
async def test_the_storage_report_gives_no_hint_of_a_hidden_comment(
    setup: tuple[Api, Api, TableRef], who: str
) -> None:
    # Items read and capacity consumed would tell a hidden comment from a missing one (and
    # its size); outside EXPLAIN only moderators see them. The rest of the answer is
    # the same for both ids.
    _, pre, own = setup
    hidden = await create(pre, own_product_id())
    async with running_api(own.client, own.name, explain=False) as production:
        answers = []
        for cid in (hidden, "0" * 32):
            gid = str(relay.GlobalID("Comment", cid))
            body = await production.gql(
                "query($c: ID!, $g: ID!) { comment(commentId: $c) { commentId } "
                "node(id: $g) { id } nodes(ids: [$g]) { id } }",
                {"c": cid, "g": gid},
                ROLES[who],
            )
            del body["extensions"]["requestId"]
            answers.append(body)
        assert answers[0] == answers[1]
        assert "itemsRead" not in answers[0]["extensions"]["storage"]
        moderated = await production.gql(
            "query($c: ID!) { comment(commentId: $c) { commentId } }",
            {"c": hidden},
            ROLES["moderator"],
        )
    assert moderated["extensions"]["storage"]["itemsRead"] == 1


BY_ID = (
    "query($c: ID!, $g: ID!, $v: ID!) { comment(commentId: $c) { commentId } "
    "node(id: $g) { id } nodes(ids: [$g]) { id } again: comment(commentId: $c) { commentId } "
    "shown: comment(commentId: $v) { commentId } }"
)


@pytest.mark.parametrize("who", sorted(ROLES))
async def test_explain_figures_of_a_hidden_comment_are_an_unknown_ids(
    setup: tuple[Api, Api, TableRef], who: str
) -> None:
    # With EXPLAIN on, items read and capacity are shown to everyone: for a viewer who may
    # not see a comment, they are those of an id that does not exist, also in a batch
    # beside a comment the viewer sees. Its author and moderators see what was read.
    post, pre, _ = setup
    hidden = await create(pre, own_product_id())
    shown = await create(post, own_product_id())
    answers = []
    for cid in (hidden, "0" * 32):
        gid = str(relay.GlobalID("Comment", cid))
        body = await pre.gql(BY_ID, {"c": cid, "g": gid, "v": shown}, ROLES[who])
        del body["extensions"]["requestId"]
        answers.append(body)
    figures = [answer["extensions"]["storage"] for answer in answers]
    assert figures[1]["itemsRead"] == 1  # the comment shown, only
    if who in SEES_UNPUBLISHED:
        assert figures[0]["itemsRead"] == 2
        assert figures[0]["readCapacityUnits"] > figures[1]["readCapacityUnits"]
    else:
        assert answers[0] == answers[1]


# Writes that read a comment to refuse it, each by someone who may not see a pending one.
HIDDEN_WRITES = {
    "vote": (
        "other",
        "mutation($id: ID!) { voteHelpful(input: {id: $id, vote: HELPFUL}) "
        "{ userErrors { code field } } }",
    ),
    "report": (
        "other",
        "mutation($id: ID!) { reportComment(input: {id: $id, reason: SPAM}) "
        "{ userErrors { code field } } }",
    ),
    "reply": (
        "merchant",
        'mutation($id: ID!) { replyToComment(input: {id: $id, body: "Thanks"}) '
        "{ userErrors { code field } } }",
    ),
    "delete": (
        "other",
        "mutation($id: ID!) { deleteComment(input: {id: $id}) { userErrors { code field } } }",
    ),
    "edit": (
        "other",
        'mutation($id: ID!) { updateComment(input: {id: $id, body: "mine now"}) '
        "{ userErrors { code field } } }",
    ),
    "unreply": (
        "merchant",
        "mutation($id: ID!) { deleteReply(input: {id: $id}) { userErrors { code field } } }",
    ),
}


@pytest.mark.parametrize("write", sorted(HIDDEN_WRITES))
async def test_a_write_refused_on_a_hidden_comment_reads_as_one_on_an_unknown_id(
    setup: tuple[Api, Api, TableRef], write: str
) -> None:
    # With EXPLAIN on, a write's figures are shown too: one that read a pending comment to
    # answer NOT_FOUND must show what one on an id that does not exist shows.
    _, pre, _ = setup
    hidden = await create(pre, own_product_id())
    who, mutation = HIDDEN_WRITES[write]
    answers = []
    for cid in (hidden, "0" * 32):
        gid = str(relay.GlobalID("Comment", cid))
        body = await pre.gql(mutation, {"id": gid}, ROLES[who])
        del body["extensions"]["requestId"]
        answers.append(body)
    (payload,) = answers[0]["data"].values()
    assert payload["userErrors"][0]["code"] == "NOT_FOUND"
    assert answers[0] == answers[1]


async def test_a_moderator_decides_on_the_revision_they_reviewed(
    setup: tuple[Api, Api, TableRef],
) -> None:
    _, pre, _ = setup
    cid = await create(pre, own_product_id())
    read = "query($c: ID!) { comment(commentId: $c) { revisedAt body } }"
    seen = (await pre.data(read, {"c": cid}, ROLES["moderator"]))["comment"]["revisedAt"]
    edit = "mutation($i: UpdateCommentInput!) { updateComment(input: $i) { userErrors { code } } }"
    changed = await pre.data(edit, {"i": {"id": cid, "body": "edited"}}, ROLES["author"])
    assert changed["updateComment"]["userErrors"] == []
    decide = """mutation($i: ModerateCommentInput!) { moderateComment(input: $i) {
      comment { status body } userErrors { field code } } }"""
    stale = await pre.data(
        decide, {"i": {"id": cid, "decision": "APPROVE", "revisedAt": seen}}, ROLES["moderator"]
    )
    assert stale["moderateComment"] == {
        "comment": None,
        "userErrors": [{"field": ["input", "revisedAt"], "code": "CHANGED"}],
    }
    now = await pre.data(read, {"c": cid}, ROLES["moderator"])
    assert now["comment"]["body"] == "edited"
    assert now["comment"]["revisedAt"] > seen
    done = await pre.data(
        decide,
        {"i": {"id": cid, "decision": "APPROVE", "revisedAt": now["comment"]["revisedAt"]}},
        ROLES["moderator"],
    )
    assert done["moderateComment"]["comment"] == {"status": "PUBLISHED", "body": "edited"}


async def test_a_cursor_is_refused_by_another_listing(setup: tuple[Api, Api, TableRef]) -> None:
    _, pre, _ = setup
    product = own_product_id()
    for _ in range(2):
        await create(pre, product)
    queue = await pre.data(
        "{ moderationQueue(first: 1) { pageInfo { endCursor } } }", None, ROLES["moderator"]
    )
    cursor = queue["moderationQueue"]["pageInfo"]["endCursor"]
    for listing in (
        'product(productId: "%s") { comments(first: 1, after: "%s") { totalCount } }',
        'viewer { comments(first: 1, after: "%s%s") { totalCount } }',
    ):
        text = listing % ((product, cursor) if "product" in listing else ("", cursor))
        body = await pre.gql("{ " + text + " }", None, ROLES["moderator"])
        (error,) = body["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT"
        assert "another listing" in error["message"]


VOTE = """mutation($i: VoteHelpfulInput!) { voteHelpful(input: $i) {
  comment { helpfulCount notHelpfulCount viewerVote } userErrors { field code } } }"""


async def test_helpful_votes_per_role(setup: tuple[Api, Api, TableRef]) -> None:
    post, pre, _ = setup
    cid = await create(post, own_product_id())
    waiting = await create(pre, own_product_id())
    anonymous = await post.gql(VOTE, {"i": {"id": cid, "vote": "HELPFUL"}})
    assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"

    async def vote(who: str, target: str, verdict: str | None) -> dict[str, Any]:
        data = await post.data(VOTE, {"i": {"id": target, "vote": verdict}}, ROLES[who])
        payload: dict[str, Any] = data["voteHelpful"]
        return payload

    own = await vote("author", cid, "HELPFUL")
    assert own == {"comment": None, "userErrors": [{"field": ["input", "id"], "code": "FORBIDDEN"}]}
    assert (await vote("other", cid, "HELPFUL"))["comment"] == {
        "helpfulCount": 1,
        "notHelpfulCount": 0,
        "viewerVote": "HELPFUL",
    }
    assert (await vote("merchant", cid, "NOT_HELPFUL"))["comment"]["notHelpfulCount"] == 1
    assert (await vote("other", cid, "NOT_HELPFUL"))["comment"] == {
        "helpfulCount": 0,
        "notHelpfulCount": 2,
        "viewerVote": "NOT_HELPFUL",
    }
    assert (await vote("other", cid, None))["comment"]["viewerVote"] is None
    # Each viewer reads their own vote; anonymous readers none.
    read = "query($c: ID!) { comment(commentId: $c) { notHelpfulCount viewerVote } }"
    for who, expected in (("merchant", "NOT_HELPFUL"), ("other", None), ("anonymous", None)):
        data = await post.data(read, {"c": cid}, ROLES[who])
        assert data["comment"] == {"notHelpfulCount": 1, "viewerVote": expected}, who
    # An unpublished comment does not exist for other viewers; moderators learn why.
    hidden = await vote("other", waiting, "HELPFUL")
    assert hidden["userErrors"] == [{"field": ["input", "id"], "code": "NOT_FOUND"}]
    refused = await vote("moderator", waiting, "HELPFUL")
    assert refused["userErrors"] == [{"field": ["input", "id"], "code": "FORBIDDEN"}]


@pytest.mark.parametrize(
    "revised", ["2026-01-09T12:48:49.013641+00:00", "yesterday", "2026-02-30T00:00:00.000Z"]
)
async def test_a_malformed_revision_is_bad_input(
    setup: tuple[Api, Api, TableRef], revised: str
) -> None:
    post, _, _ = setup
    literal = (
        'mutation {{ moderateComment(input: {{id: "{}", decision: APPROVE, revisedAt: "{}"}}) '
        "{{ userErrors {{ code }} }} }}".format("0" * 32, revised)
    )
    variable = (
        "mutation($i: ModerateCommentInput!) { moderateComment(input: $i) { userErrors { code } } }"
    )
    for body in (
        await post.gql(literal, None, ROLES["moderator"]),
        await post.gql(
            variable,
            {"i": {"id": "0" * 32, "decision": "APPROVE", "revisedAt": revised}},
            ROLES["moderator"],
        ),
    ):
        (error,) = body["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error
        assert "DateTime" in error["message"]
