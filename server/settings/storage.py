"""Storage: where the table is, how the client talks to it, and how the server reads it.

``StorageSettings`` is all that the commands which only read or write the table need
(``create-table``, ``seed``, ``verify-stats``...); ``StorageUse`` is what the server adds.
Defaults are those of the storage modules that use them, read from there.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from server.settings.common import FROM_ENVIRONMENT
from storage.engine.client import ClientSettings
from storage.reads.planner import DEFAULT_TUNING
from storage.reads.snapshots import DEFAULT_BYTES as DEFAULT_PLAN_MEMORY

_CLIENT = ClientSettings()
# AWS region names (eu-west-1, us-gov-west-1, cn-north-1), or a local engine's own ("local").
_REGION = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


class StorageSettings(BaseSettings):
    """Where the table is: all that the commands which only read or write it need."""

    model_config = FROM_ENVIRONMENT

    # Unset: `comments serve` starts DynamoDB Local itself, with data under DATA_DIR; the
    # table commands go to AWS itself.
    dynamodb_endpoint_url: str | None = None
    dynamodb_table: str = "comments"
    aws_region: str = _CLIENT.region
    # Read only to know whether credentials are given: DynamoDB Local gets placeholders
    # when none are (it checks that some exist), AWS the normal chain (botocore reads them).
    aws_access_key_id: str | None = Field(default=None, repr=False)
    # Performance switches of storage.engine.client (docs/benchmarks/results.md says what each
    # is worth).
    fast_attribute_parsing: bool = _CLIENT.fast_attribute_parsing  # the attribute pass-through
    static_user_agent: bool = _CLIENT.static_user_agent  # a User-Agent made once per client
    direct_reads: bool = _CLIENT.direct_reads  # the hot reads without botocore's machinery

    @field_validator("aws_region")
    @classmethod
    def _region(cls, value: str) -> str:
        # An empty or mistyped region starts fine and fails at the first signed call.
        if not _REGION.fullmatch(value):
            raise ValueError("AWS_REGION must be a region name such as eu-west-1")
        return value

    def client_settings(self) -> ClientSettings:
        return ClientSettings(
            endpoint_url=self.dynamodb_endpoint_url,
            region=self.aws_region,
            fast_attribute_parsing=self.fast_attribute_parsing,
            static_user_agent=self.static_user_agent,
            direct_reads=self.direct_reads,
            credentials_given=self.aws_access_key_id is not None,
        )


class StorageUse(BaseSettings):
    """How the server uses the table: deadlines and the read path's knobs."""

    model_config = FROM_ENVIRONMENT

    # Every storage call of one request must finish within this many seconds.
    storage_timeout: float = Field(default=5.0, gt=0)
    # Head-room of fan-out reads, in standard deviations (storage.reads.planner.Tuning.z).
    read_headroom: float = Field(default=DEFAULT_TUNING.z, ge=0, le=5)
    # Bytes of the process's snapshots of counters and page heads (storage.reads.snapshots),
    # by which a filtered page takes one storage round; 0 turns them off.
    plan_memory_bytes: int = Field(default=DEFAULT_PLAN_MEMORY, ge=0, le=1 << 30)
