"""UserError: what mutation payloads report about their input, every problem at once."""

from __future__ import annotations

from typing import Self

import strawberry

from resolvers.user_errors import Problem, ProblemCode, Problems

UserErrorCode = strawberry.enum(
    ProblemCode,
    name="UserErrorCode",
    description="Why an input was refused.",
)


@strawberry.type(
    description="A problem with a mutation's input or with a rule of the product; every "
    "problem is listed at once."
)
class UserError:
    field: list[str] | None = strawberry.field(
        description='Path of the input field, e.g. ["input", "rating"]; null when no single '
        "field is at fault."
    )
    message: str = strawberry.field(description="What is wrong, with the limit where one applies.")
    code: ProblemCode = strawberry.field(description="Why the input was refused.")

    @classmethod
    def all(cls, refused: Problems) -> list[Self]:
        """Every problem of a refused mutation, in order."""
        return [cls.of(p) for p in refused.problems]

    @classmethod
    def of(cls, problem: Problem) -> Self:
        return cls(
            field=None if problem.field is None else list(problem.field),
            message=problem.message,
            code=problem.code,
        )
