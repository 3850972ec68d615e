"""Relay global ids as clients send them."""

from __future__ import annotations

from strawberry import relay

from resolvers.errors import BadUserInput


def decode_global_id(value: str) -> tuple[str, str]:
    """(type name, id) of a Relay global id; BAD_USER_INPUT when it is not one."""
    try:
        gid = relay.GlobalID.from_id(value)
    except relay.GlobalIDValueError as exc:  # strawberry raises it for base64 errors too
        raise BadUserInput("not a valid global id") from exc
    return gid.type_name, gid.node_id
