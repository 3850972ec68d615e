"""Configuration from the environment (pydantic-settings); see the README's table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    # Unset: the server starts DynamoDB Local itself, with data under DATA_DIR.
    dynamodb_endpoint_url: str | None = None
    dynamodb_table: str = "comments"
    aws_region: str = "us-east-1"
    # Unset in embedded mode: generated at start-up, with a dev token printed.
    jwt_secret: str | None = None
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Production posture: GraphiQL, introspection, field suggestions and the dev token
    # default to off, and a JWT secret and an endpoint are required (see the README).
    production: bool = False
    # Unset: on in development, off in production.
    graphiql: bool | None = None
    introspection: bool | None = None
    field_suggestions: bool | None = None
    # Requests whose body is larger are refused (413) before any of it is parsed.
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    # Points a request may cost (storage queries it could run, see schema.cost).
    max_query_cost: int = Field(default=500, ge=1)
    max_response_nodes: int = Field(default=1000, ge=1)  # objects a response may hold
    data_dir: Path = Path(".data")
    # Every storage call of one request must finish within this many seconds.
    storage_timeout: float = Field(default=5.0, gt=0)
    # Create the table at start-up (unset: only with the embedded engine).
    create_table: bool | None = None
    # Demo data written when this start created the table.
    seed_demo: bool = True
    # Print a ready-to-paste dev token at start-up (unset: only when the secret is generated).
    dev_token: bool | None = None
    # Head-room of fan-out reads, in standard deviations (storage.planner.Tuning.z).
    read_headroom: float = Field(default=0.25, ge=0, le=5)
    # Performance switches (see benchmarks/RESULTS.md for what each is worth).
    graphql_caches: bool = True  # parser and validation caches
    fast_attribute_parsing: bool = True  # see storage.client._WireAttributeParser
    orjson: bool = True  # encode responses with orjson
    gc_freeze: bool = True  # move start-up objects out of the collector's way
    uvicorn_loop: Literal["auto", "asyncio", "uvloop"] = "auto"
    uvicorn_http: Literal["auto", "h11", "httptools"] = "auto"
    access_log: bool = True
    demo_products: int = Field(default=60, ge=0)

    @field_validator("jwt_secret")
    @classmethod
    def _long_enough(cls, value: str | None) -> str | None:
        # RFC 7518: an HS256 key should have at least 256 bits.
        if value is not None and len(value.encode()) < 32:
            raise ValueError("JWT_SECRET must be at least 32 bytes")
        return value

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @model_validator(mode="after")
    def _production_needs(self) -> Self:
        if self.production and self.embedded:
            raise ValueError("PRODUCTION needs DYNAMODB_ENDPOINT_URL (no embedded engine)")
        if self.production and self.jwt_secret is None:
            raise ValueError("PRODUCTION needs JWT_SECRET")
        return self

    @property
    def graphiql_on(self) -> bool:
        return not self.production if self.graphiql is None else self.graphiql

    @property
    def introspection_on(self) -> bool:
        return not self.production if self.introspection is None else self.introspection

    @property
    def suggestions_on(self) -> bool:
        return not self.production if self.field_suggestions is None else self.field_suggestions

    @property
    def embedded(self) -> bool:
        return not self.dynamodb_endpoint_url

    @property
    def creates_table(self) -> bool:
        return self.embedded if self.create_table is None else self.create_table
