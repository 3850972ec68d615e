"""Privacy requests (moderators only): ``exportAuthor``, ``authorErasure`` and
``eraseAuthor``. The export is a JSON document in a String: it is a file handed to the
person who asked, kept byte for byte as the server wrote it, and a String needs no custom
scalar in the generated clients (docs/privacy.md describes every field)."""

from __future__ import annotations

import enum

import strawberry

from resolvers import privacy
from resolvers.user_errors import Problems
from schema.context import Info
from schema.user_errors import UserError
from storage.model.erasure import Job, Mode


@strawberry.enum(description="What an erasure does to the author's comments.")
class ErasureMode(enum.Enum):
    DELETE = strawberry.enum_value(
        Mode.DELETE.value,
        description="Deleted, as a moderator's delete: every count, listing and facet moves.",
    )
    ANONYMIZE = strawberry.enum_value(
        Mode.ANONYMIZE.value,
        description='Kept, under "Anonymous", each with a fresh random author id: nothing '
        "links them to the author or to each other.",
    )


@strawberry.enum(description="Where an erasure is.")
class ErasureState(enum.Enum):
    RUNNING = strawberry.enum_value("RUNNING", description="Not finished yet.")
    DONE = strawberry.enum_value(
        "DONE", description="Finished; the author.erased event announces it."
    )


@strawberry.type(description="What an erasure has erased so far.")
class ErasureCounts:
    comments: int = strawberry.field(description="Comments deleted or anonymized.")
    votes: int = strawberry.field(description="Helpful votes withdrawn.")
    reports: int = strawberry.field(description="Reports taken back.")
    replies: int = strawberry.field(
        description="Replies removed: always 0, as replies record no author (see the docs)."
    )


@strawberry.type(description="An erasure of an author's data (a job).")
class AuthorErasure:
    request_id: strawberry.ID = strawberry.field(
        description="The erasure's id, also in its author.erased event."
    )
    mode: ErasureMode = strawberry.field(description="What it does to the comments.")
    state: ErasureState = strawberry.field(description="Where it is.")
    counts: ErasureCounts = strawberry.field(description="What it has erased so far.")
    started_at: str = strawberry.field(description="When it started (ISO-8601, UTC).")
    finished_at: str | None = strawberry.field(description="When it finished; null: running.")

    @classmethod
    def of(cls, job: Job) -> AuthorErasure:
        return cls(
            request_id=strawberry.ID(job.request_id),
            mode=ErasureMode[job.mode.name],
            state=ErasureState[job.state.name],
            counts=ErasureCounts(**job.counts),
            started_at=job.started_at,
            finished_at=job.finished_at,
        )


@strawberry.input(description="Whose data to erase, and how.")
class EraseAuthorInput:
    subject: str = strawberry.field(
        description=f"The author's token subject (sub), 1 to {privacy.SUBJECT_MAX} characters."
    )
    mode: ErasureMode | None = strawberry.field(
        default=None, description="null: the shop's setting (ERASURE_MODE)."
    )


@strawberry.type(description="The erasure, as it is when the request answers.")
class EraseAuthorPayload:
    erasure: AuthorErasure | None = strawberry.field(
        description="The erasure; RUNNING: it goes on with the next call for the same subject "
        "(or `comments erase-author --resume`). null when userErrors is not empty."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Every problem with the input; empty when the erasure started."
    )


async def export_author(info: Info, subject: str) -> str | None:
    return await privacy.export_author(info.context, subject)


async def author_erasure(info: Info, request_id: strawberry.ID) -> AuthorErasure | None:
    job = await privacy.erasure(info.context, str(request_id))
    return None if job is None else AuthorErasure.of(job)


async def erase_author(info: Info, input: EraseAuthorInput) -> EraseAuthorPayload:
    mode = None if input.mode is None else Mode[input.mode.name]
    try:
        job = await privacy.erase_author(info.context, input.subject, mode)
    except Problems as refused:
        return EraseAuthorPayload(erasure=None, user_errors=UserError.all(refused))
    return EraseAuthorPayload(erasure=AuthorErasure.of(job), user_errors=[])
