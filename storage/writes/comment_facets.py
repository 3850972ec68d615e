"""A comment's facet values as a create or an edit makes them: its answers, checked against
the definitions that apply (``answers``), and its topics, tagged with the stored taxonomy
(``tagging``). Other values (a photo's) are left as they are; the incentivized mark is
the create's alone (an ``Edit`` has no field for it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from storage.engine.table import TableRef
from storage.model.attributes import DefinitionSet, answers_of, validate_answers
from storage.model.comments import Comment, NewComment
from storage.model.topics import Tagger
from storage.writes.answers import check_answers, with_answers
from storage.writes.tagging import FreshTagger, tag
from storage.writes.transaction import CallBudget


async def new_with_facets(
    table: TableRef,
    new: NewComment,
    *,
    answers: Sequence[object] | None,
    tags: FreshTagger | None,
    budget: CallBudget | None = None,
) -> NewComment:
    """``new`` with its answers (when given: checked, ``InvalidFields`` naming every
    problem) and its topics tagged (when a tagger is given); as it is otherwise."""
    if answers is not None:
        checked = await check_answers(table, new.product_id, answers, budget=budget)
        new = replace(new, facets=with_answers(new.facets, checked))
    if tags is not None:
        new = tag(await tags.get(), new)
    return new


def edited_facets(
    before: Comment,
    content: Comment,
    *,
    answers: Sequence[object] | None,
    definitions: DefinitionSet,
    tagger: Callable[[], Tagger | None],
) -> Comment:
    """``content`` (the comment as an edit leaves its text) with the edit's answers replacing
    the stored ones (None: kept; checked against ``definitions``, a stored answer resent
    unchanged kept even when retired) and its topics tagged again when the title, the body
    or the language changed, with ``tagger()`` (``FreshTagger.current``, which refuses an
    aged one)."""
    if answers is not None:
        checked = validate_answers(definitions, answers, stored=answers_of(before.facets))
        content = replace(content, facets=with_answers(content.facets, checked))
    if retagged(before, content):
        content = tag(tagger(), content)
    return content


def retagged(before: Comment, after: Comment) -> bool:
    """Whether an edit changed what tagging reads."""
    return (before.title, before.body, before.language) != (after.title, after.body, after.language)
