"""Erasing an author: a resumable, idempotent job (``storage.model.erasure``).

``start_erasure`` writes the job (RUNNING, holding the subject) and the fence in one
transaction; while an erasure of the subject runs, starting another returns it. From the
fence's commit on, the subject's new comments are refused (their create conditions on the
fence's absence), so every comment of theirs is erased or was refused: that is the cut.

``run_erasure`` then works in passes. A pass finds everything of the subject's
(``storage.reads.author_data``: one scan) and erases it, each item through a conditioned
transition (``storage.writes.erase``): comments deleted through the delete path or
anonymized, votes withdrawn, reports taken back, idempotency records of their comments
deleted first (they are found through the comments). Passes repeat until one finds
nothing: votes and reports are not fenced (they are keyed under other people's comments),
so one the subject cast while a pass ran is erased by the next pass. A vote or report
committed after the last pass began is after the cut: new data, like any write after the
job. Then the author's own partition (limits, rates) goes, and one transaction sets the
job DONE, removes the subject from it and removes the fence.

Everything is idempotent: a step that finds its item gone or changed does nothing, so a
crashed run is finished by running again (``resume``), and a second run of a finished job
changes nothing. The job's counts are added after each group of steps (``CONCURRENCY``
at most), so a crash can leave at most that many erased items uncounted; the table's own
counters are exact regardless, as every change went through the write path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

from storage.base.clock import utc_now
from storage.base.errors import ConditionFailed
from storage.base.expressions import Attr, Update, delete_request, get_request, put_request
from storage.base.types import Item
from storage.engine.batch import BATCH_WRITE_MAX, batch_write
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.erasure import (
    COUNTS_ATTR,
    FINISHED_ATTR,
    PASSES_ATTR,
    REQUEST_ID_ATTR,
    STATE_ATTR,
    SUBJECT_ATTR,
    Job,
    Mode,
    State,
    fence_key,
    item_to_job,
    job_item,
    job_key,
    new_request_id,
)
from storage.reads.author_data import Found, commented_on, find_author_data
from storage.writes.erase import anonymize_comment, delete_authored, remove_report, withdraw_vote
from storage.writes.transaction import CallBudget, Part, transact

# Steps in flight at once, and the most a crash can leave uncounted.
CONCURRENCY = 8
# Passes one run makes before it leaves the job RUNNING for the next run (an author who
# keeps voting and reporting through every pass).
MAX_PASSES = 6
JOB = "job"
FENCE = "fence"

Progress = Callable[[str], None]


async def read_job(table: TableRef, request_id: str) -> Job | None:
    """The job of ``request_id`` (strongly consistent), or None."""
    response = await table.client.get_item(
        **get_request(table.name, job_key(request_id), consistent=True)
    )
    item = response.get("Item")
    return None if item is None else item_to_job(item)


async def start_erasure(
    table: TableRef, subject: str, mode: Mode, *, clock: Callable[[], datetime] = utc_now
) -> Job:
    """Start erasing ``subject`` (job and fence in one transaction); an erasure of the
    subject already running is returned instead (with its own mode)."""
    if not subject:
        raise ValueError("an author subject is not empty")
    for _ in range(4):
        fence = await table.client.get_item(
            **get_request(table.name, fence_key(subject), consistent=True)
        )
        if "Item" in fence:
            running = await read_job(table, fence["Item"][REQUEST_ID_ATTR]["S"])
            if running is not None:
                return running
        job = Job(
            request_id=new_request_id(),
            mode=mode,
            state=State.RUNNING,
            counts={},
            subject=subject,
            started_at=keys.format_timestamp(clock()),
        )
        job = replace(job, counts=item_to_job(job_item(job)).counts)
        fence_item = {**fence_key(subject), REQUEST_ID_ATTR: {"S": job.request_id}}
        absent = Attr("PK").not_exists()
        parts = [
            Part(FENCE, {"Put": put_request(table.name, fence_item, absent)}),
            Part(JOB, {"Put": put_request(table.name, job_item(job), absent)}),
        ]
        if await transact(table, parts, CallBudget()) is None:
            return job
    raise RuntimeError("the erasure's fence kept changing")  # pragma: no cover


async def running_jobs(table: TableRef) -> list[Job]:
    """Every RUNNING job (a scan: jobs are few and this runs from the command line)."""
    params = {
        "TableName": table.name,
        "ConsistentRead": True,
        "FilterExpression": "begins_with(#pk, :e) AND #st = :r",
        "ExpressionAttributeNames": {"#pk": "PK", "#st": STATE_ATTR},
        "ExpressionAttributeValues": {
            ":e": {"S": keys.ERASURE_PREFIX},
            ":r": {"S": State.RUNNING.value},
        },
    }
    jobs = []
    while True:
        response = await table.client.scan(**params)
        jobs += [item_to_job(i) for i in response.get("Items", [])]
        if "LastEvaluatedKey" not in response:
            return sorted(jobs, key=lambda j: j.started_at)
        params["ExclusiveStartKey"] = response["LastEvaluatedKey"]


async def run_erasure(
    table: TableRef,
    request_id: str,
    *,
    progress: Progress | None = None,
    max_passes: int = MAX_PASSES,
    concurrency: int = CONCURRENCY,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> Job:
    """Run (or resume) the job until it is DONE, or for ``max_passes`` passes (it stays
    RUNNING then, for the next run); the job as it now is. A DONE job is returned as is."""
    say = progress or (lambda _: None)
    job = await read_job(table, request_id)
    if job is None:
        raise LookupError(f"no erasure {request_id}")
    if job.done:
        return job
    subject = job.subject
    assert subject is not None  # RUNNING jobs hold it
    for n in range(1, max_passes + 1):
        found = await find_author_data(table, subject)
        say(
            f"pass {n}: scanned {found.scanned} items; found {len(found.comments)} comments, "
            f"{len(found.votes)} votes, {len(found.reports)} reports"
        )
        await _count(table, request_id, {}, passes=1)
        if not (found.comments or found.votes or found.reports or found.records):
            await _remove_own(table, found, backoff)
            return await _finish(table, job)
        await _erase(table, job, subject, found, concurrency, backoff, say)
    say("the author kept writing through every pass: the job stays RUNNING; run it again")
    return await read_job(table, request_id) or job


async def _erase(
    table: TableRef,
    job: Job,
    subject: str,
    found: Found,
    concurrency: int,
    backoff: Backoff,
    say: Progress,
) -> None:
    # Records first: they are found through their comment, which a DELETE removes.
    records = [{"DeleteRequest": {"Key": _key(r)}} for r in found.records]
    for start in range(0, len(records), BATCH_WRITE_MAX):
        await batch_write(table, records[start : start + BATCH_WRITE_MAX], backoff)
    comment: Callable[[str], Awaitable[bool]]
    if job.mode is Mode.DELETE:

        async def comment(cid: str) -> bool:
            return await delete_authored(table, cid, subject, backoff=backoff)
    else:

        async def comment(cid: str) -> bool:
            return await anonymize_comment(table, cid, subject, backoff=backoff)

    steps: list[tuple[str, Callable[[], Awaitable[bool]]]] = []
    for item in found.comments:
        steps.append(("comments", partial(comment, item["commentId"]["S"])))
    for item in found.votes:
        vote = partial(withdraw_vote, table, commented_on(item), subject, backoff=backoff)
        steps.append(("votes", vote))
    for item in found.reports:
        report = partial(remove_report, table, commented_on(item), subject, backoff=backoff)
        steps.append(("reports", report))
    done = 0
    for start in range(0, len(steps), concurrency):
        chunk = steps[start : start + concurrency]
        results = await asyncio.gather(*(step() for _, step in chunk))
        counts: dict[str, int] = {}
        for (kind, _), changed in zip(chunk, results, strict=True):
            counts[kind] = counts.get(kind, 0) + int(changed)
        await _count(table, job.request_id, counts)
        done += len(chunk)
        say(f"erased {done} of {len(steps)} items")


async def _count(
    table: TableRef, request_id: str, counts: dict[str, int], *, passes: int = 0
) -> None:
    """Add to the job's counts (and passes), while it runs. The counts are a map (the
    agreed shape), and ADD takes top-level attributes only: each is SET to itself plus."""
    names = {"#st": STATE_ATTR, "#p": PASSES_ATTR}
    values: dict[str, Any] = {
        ":run": {"S": State.RUNNING.value},
        ":zero": {"N": "0"},
        ":passes": {"N": str(passes)},
    }
    sets = ["#p = if_not_exists(#p, :zero) + :passes"]
    for n, (kind, added) in enumerate(sorted(counts.items())):
        if added:
            names["#c"] = COUNTS_ATTR
            names[f"#k{n}"] = kind
            values[f":n{n}"] = {"N": str(added)}
            sets.append(f"#c.#k{n} = #c.#k{n} + :n{n}")
    if len(sets) == 1 and not passes:
        return
    with suppress(ConditionFailed):  # another run finished it meanwhile
        await table.client.update_item(
            TableName=table.name,
            Key=job_key(request_id),
            UpdateExpression="SET " + ", ".join(sets),
            ConditionExpression="#st = :run",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )


async def _remove_own(table: TableRef, found: Found, backoff: Backoff) -> None:
    """Delete the author's own partition (limits, rates), the fence aside."""
    own = [
        {"DeleteRequest": {"Key": _key(i)}} for i in found.own if i["SK"]["S"] != keys.ERASING_SK
    ]
    for start in range(0, len(own), BATCH_WRITE_MAX):
        await batch_write(table, own[start : start + BATCH_WRITE_MAX], backoff)


async def _finish(table: TableRef, job: Job) -> Job:
    """DONE, the subject removed from the job and the fence gone, in one transaction."""
    assert job.subject is not None
    now = keys.format_timestamp(utc_now())
    u = Update()
    u.set(STATE_ATTR, State.DONE.value)
    u.set(FINISHED_ATTR, now)
    u.remove(SUBJECT_ATTR)
    u.condition(Attr(STATE_ATTR).eq(State.RUNNING.value))
    mine = Attr(REQUEST_ID_ATTR).eq(job.request_id)
    parts = [
        Part(JOB, {"Update": u.request(table.name, job_key(job.request_id))}),
        Part(FENCE, {"Delete": delete_request(table.name, fence_key(job.subject), mine)}),
    ]
    for attempt in range(1, 5):
        cancel = await transact(table, parts, CallBudget())
        if cancel is None or cancel.any_condition_failed:
            break  # committed, or another run finished it
        await DEFAULT_BACKOFF.sleep(attempt)
    done = await read_job(table, job.request_id)
    assert done is not None
    return done


def _key(item: Item) -> Item:
    return {"PK": item["PK"], "SK": item["SK"]}
