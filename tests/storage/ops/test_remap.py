"""Remapping retired answers: each comment's answers move in its own transition, exact
while writers edit meanwhile; the values leave the retired ones once none is left."""

from __future__ import annotations

import asyncio
import random

import pytest

from storage.engine.table import TableRef
from storage.model.attributes import parse_definitions
from storage.model.comments import ListingFilter, ModerationMode, NewComment
from storage.model.facets import FacetKind, FacetValue, Scope
from storage.model.problems import InvalidFields
from storage.ops.remap import remap_answers
from storage.ops.verify import verify
from storage.reads.facet_reader import facet_listing_counts
from storage.writes import create_comment, get_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.facet_settings import read_definitions, save_definitions
from tests.helpers import FAST, own_table
from tests.storage.facet_samples import FIT

FIT_VALUES: list[dict[str, object]] = [
    {"value": "small", "label": {"en": "Small"}},
    {"value": "true-to-size", "label": {"en": "True to size"}},
    {"value": "large", "label": {"en": "Large"}},
]
LARGE = FacetValue.attribute("fit", "large")
SMALL = FacetValue.attribute("fit", "small")


def _answers(facets: frozenset[FacetValue]) -> set[str]:
    return {f.token for f in facets if f.kind is FacetKind.ATTRIBUTE}


async def test_a_remap_moves_every_answer_of_a_retired_value_exactly(table: TableRef) -> None:
    own = await own_table(table, "remap")
    pid, scope = "p-remap", Scope.product("p-remap")
    await save_definitions(own, scope, parse_definitions([FIT]), revision=0)
    rng = random.Random(5)
    made = []
    for n in range(40):
        answer = rng.choice(["small", "large", "large"])
        mode = ModerationMode.PRE if n % 7 == 0 else ModerationMode.POST
        new = NewComment(pid, "en", rng.randint(1, 5), f"b{n}", f"a{n}")
        created = await create_comment(
            own, new, answers=[{"key": "fit", "value": answer}], moderation=mode, backoff=FAST
        )
        made.append(created.comment)
    # "large" leaves the definitions: its answers stay, counted under it, retired.
    values = [v for v in FIT_VALUES if v["value"] != "large"]
    fewer = [{**FIT, "values": values}]
    stored = await save_definitions(own, scope, parse_definitions(fewer), revision=1)
    assert [(r.key, r.value) for r in stored.retired] == [("fit", "large")]
    listing = ListingFilter(pid, facets=frozenset({LARGE}))
    assert (await facet_listing_counts(own, listing)).total(listing)

    async def edits() -> None:  # writers keep editing texts and ratings meanwhile
        for c in made[::3]:
            edit = Edit(body=f"{c.body} again", rating=rng.randint(1, 5))
            await edit_comment(own, c.comment_id, edit, author_id=c.author_id, backoff=FAST)

    remapping = remap_answers(own, scope, [{"key": "fit", "value": "large", "to": "small"}])
    done, _ = await asyncio.gather(remapping, edits())
    assert done.settled == (("fit", "large"),)
    for c in made:
        now = await get_comment(own, c.comment_id)
        assert now is not None
        assert _answers(now.facets) == {SMALL.token}
    assert (await facet_listing_counts(own, listing)).total(listing) == 0
    small = ListingFilter(pid, facets=frozenset({SMALL}))
    published = sum(1 for c in made if c.published)
    assert (await facet_listing_counts(own, small)).total(small) == published
    assert (await verify(own)).exact
    after = await read_definitions(own, scope)
    assert len(after.retired) == 0
    # Nothing retired any more: the same remap is refused, with its path.
    with pytest.raises(InvalidFields) as refused:
        await remap_answers(own, scope, [{"key": "fit", "value": "large", "to": "small"}])
    assert [p.dotted for p in refused.value.problems] == ["remap[0].value"]


async def test_a_remap_to_nothing_drops_the_answers(table: TableRef) -> None:
    own = await own_table(table, "remapdrop")
    pid, scope = "p-drop", Scope.product("p-drop")
    await save_definitions(own, scope, parse_definitions([FIT]), revision=0)
    new = NewComment(pid, "en", 4, "b", "a")
    made = await create_comment(own, new, answers=[{"key": "fit", "value": "large"}], backoff=FAST)
    await save_definitions(own, scope, parse_definitions([]), revision=1)  # fit removed
    done = await remap_answers(own, scope, [{"key": "fit", "value": "large", "to": None}])
    assert done.moved == 1
    now = await get_comment(own, made.comment.comment_id)
    assert now is not None
    assert _answers(now.facets) == set()
    assert (await verify(own)).exact
