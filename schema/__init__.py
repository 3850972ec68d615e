"""The GraphQL schema (Strawberry): types, roots and the extensions that shape responses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import strawberry
from graphql import GraphQLError
from strawberry.extensions import (
    AddValidationRules,
    DisableIntrospection,
    MaxTokensLimiter,
    SchemaExtension,
)
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext

from schema.caches import DocumentCaches
from schema.comments.types import Comment
from schema.cost import MAX_NODES, cost_limit
from schema.garbage import LargeRequestCollector
from schema.limits import ListLimit, OneMutation, alias_limit, depth_limit, size_limit
from schema.masking import StorageReport, with_codes
from schema.mutation import Mutation
from schema.products.groups import ProductGroup
from schema.products.types import Product
from schema.query import Query
from schema.scalars import SCALARS
from schema.subscription import Subscription


@dataclass(frozen=True, slots=True)
class SchemaOptions:
    max_depth: int = 12
    max_aliases: int = 30
    max_tokens: int = 2000
    max_cost: int = 500
    # Objects a response may hold (schema.cost); MAX_RESPONSE_NODES in the settings.
    max_nodes: int = MAX_NODES
    # Fields an operation may expand to with its fragments written out.
    max_fields: int = 2000
    introspection: bool = True
    caches: bool = True


class CommentsSchema(strawberry.Schema):
    """Strawberry's schema without its per-error logging: ``with_codes`` logs the unexpected
    errors once, with the request id; client mistakes are not worth a log line."""

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        return None


def build_schema(
    options: SchemaOptions = SchemaOptions(), *, caches: DocumentCaches | None = None
) -> CommentsSchema:
    """The schema with its limits; ``caches`` replaces the default parser and validation
    caches (``options.caches`` off: nothing is cached)."""
    # Extensions are made per request (classes or factories); the parser and validation
    # caches live as long as the schema, and the rule classes are made once here so that
    # the validation cache recognises them.
    rules = [
        depth_limit(options.max_depth),
        size_limit(options.max_fields),
        alias_limit(options.max_aliases),
        ListLimit,
        OneMutation,
    ]
    extensions: list[Callable[[], SchemaExtension] | type[SchemaExtension]] = [
        StorageReport,
        lambda: MaxTokensLimiter(max_token_count=options.max_tokens),
        lambda: AddValidationRules(rules),
        cost_limit(options.max_cost, options.max_nodes),
    ]
    if caches is None:
        caches = DocumentCaches() if options.caches else DocumentCaches.off()
    extensions += caches.extensions()
    extensions.append(LargeRequestCollector().extension())
    if not options.introspection:
        extensions.append(DisableIntrospection)
    return CommentsSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        types=[Product, ProductGroup, Comment],
        extensions=extensions,
        config=StrawberryConfig(auto_camel_case=True, scalar_map=SCALARS),
    )


__all__ = ["CommentsSchema", "SchemaOptions", "build_schema", "with_codes"]
