"""The Info type every resolver in the schema receives."""

from __future__ import annotations

from typing import TypeAlias

import strawberry

from resolvers.context import Context

Info: TypeAlias = strawberry.Info[Context, None]
