"""Writes: moderation and the per-author limits and rates, all kept in DynamoDB.

Defaults are those of ``storage.writes`` (limits, rates) and ``storage.writes.reports``,
read from there; 0 lifts a limit (None in ``WriteLimits``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings

from server.settings.common import FROM_ENVIRONMENT
from storage.model.comments import ModerationMode
from storage.model.erasure import Mode as ErasureMode
from storage.writes import DEFAULT_LIMITS, DEFAULT_RATES, WriteLimits, WriteRates
from storage.writes.reports import DEFAULT_THRESHOLD as DEFAULT_REPORT_THRESHOLD


class WriteSettings(BaseSettings):
    """Moderation, and what one author may write."""

    model_config = FROM_ENVIRONMENT

    # post: new comments are published at once; pre: new and edited comments wait as
    # PENDING until a moderator approves them.
    moderation: Literal["post", "pre"] = "post"
    # Distinct viewers whose reports since the last decision return a published comment to
    # PENDING.
    report_threshold: int = Field(default=DEFAULT_REPORT_THRESHOLD, ge=1, le=1000)
    # Per-author write limits, kept in DynamoDB (0 lifts one): comments one author may have
    # on one product, and comments one author may create per clock hour.
    comments_per_product: int = Field(default=DEFAULT_LIMITS.per_product or 0, ge=0)
    comments_per_hour: int = Field(default=DEFAULT_LIMITS.per_hour or 0, ge=0)
    # Every other write one author may make per hour, by family (0 lifts one): counted in
    # DynamoDB before the write, over a sliding hour (storage.writes.rates says why each
    # default is what it is).
    edits_per_hour: int = Field(default=DEFAULT_RATES.edit or 0, ge=0)
    deletes_per_hour: int = Field(default=DEFAULT_RATES.delete or 0, ge=0)
    replies_per_hour: int = Field(default=DEFAULT_RATES.reply or 0, ge=0)
    reports_per_hour: int = Field(default=DEFAULT_RATES.report or 0, ge=0)
    votes_per_hour: int = Field(default=DEFAULT_RATES.vote or 0, ge=0)
    moderations_per_hour: int = Field(default=DEFAULT_RATES.moderate or 0, ge=0)
    # What an erasure of an author (eraseAuthor, `comments erase-author`) does to their
    # comments when the request does not say: DELETE them, or ANONYMIZE them (the text
    # stays under "Anonymous", every link to the author removed).
    erasure_mode: Literal["DELETE", "ANONYMIZE"] = "DELETE"

    @property
    def moderation_mode(self) -> ModerationMode:
        return ModerationMode(self.moderation)

    @property
    def default_erasure_mode(self) -> ErasureMode:
        return ErasureMode(self.erasure_mode)

    @property
    def write_limits(self) -> WriteLimits:
        return WriteLimits(
            per_product=self.comments_per_product or None,
            per_hour=self.comments_per_hour or None,
            rates=WriteRates(
                edit=self.edits_per_hour or None,
                delete=self.deletes_per_hour or None,
                reply=self.replies_per_hour or None,
                report=self.reports_per_hour or None,
                vote=self.votes_per_hour or None,
                moderate=self.moderations_per_hour or None,
            ),
        )
