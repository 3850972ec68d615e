"""Webhooks as items: endpoints, the outbox of events, the lanes that deliver them.

One shop per table, so every endpoint lives in one partition (``ENDPOINTS_PK``), at most
``ENDPOINTS_MAX`` of them, counted by a counter item moved in the same transaction as the
endpoint it counts (conditioned on the count read: STYLE rule 11).

An *event* is written once, by whichever process holds the stream shard its change came
from (``storage.live.claimed``), as three items in one transaction:

- a marker keyed by the event id (``msg_`` and a digest of the changed item's key, the
  stream record's sequence number and the kind), put only if absent: a change read twice
  (a shard handed on after its holder died) writes nothing the second time;
- the scope's counter (``SEQ_PK``), moved from the value read to the next: every event of a
  product gets the next number of that product, with no gaps (the shop-wide scope ``*``
  numbers what concerns no product, ``author.erased``);
- the event in its scope's log (``LOG_PK``), sort key its number, so a lane reads a
  product's events in order with one Query.

A *lane* is one endpoint and one scope: its item (``LANE_PK``) holds how far it got
(``cursor``) and who delivers it now (``owner`` until ``until``); a *due* item
(``DUE_PK``) exists while the lane has events it has not delivered, so delivery finds its
work with a Query of one partition instead of a scan, and no index is added. An event's
transaction also raises the due item of every endpoint it is for (at most
``ENDPOINTS_MAX`` of them, within a transaction's 100 items).

None of these items carries an attribute that an index of the table keys on, so no index
sees them, and code of an older release ignores them: the layout version is not raised.

Pure: no I/O.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from storage.base.errors import InvalidInput
from storage.base.types import Item

ENDPOINTS_PK = "WEBHOOK#ENDPOINTS"
ENDPOINT_PREFIX = "EP#"
ENDPOINT_COUNT_SK = "COUNT"
ENDPOINTS_MAX = 50
SEQ_PREFIX = "WHSEQ#"
MSG_PREFIX = "WHMSG#"
LOG_PREFIX = "WHLOG#"
DUE_PK = "WHDUE"
LANE_PREFIX = "WHLANE#"
FAILED_PREFIX = "WHFAIL#"
# The scope of events that concern no one product.
SHOP_SCOPE = "*"
# Digits of a sequence number in sort keys (so that strings sort as numbers).
SEQ_WIDTH = 14

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
URL_MAX = 2048
FILTER_MAX = 100
# Days an event stays in its scope's log (TTL), well past the longest retry horizon.
LOG_DAYS = 7


class EventType(enum.Enum):
    """What a webhook event says; its value is the ``type`` in the payload."""

    COMMENT_PUBLISHED = "comment.published"
    COMMENT_UPDATED = "comment.updated"
    COMMENT_REMOVED = "comment.removed"
    COMMENT_REPLIED = "comment.replied"
    AUTHOR_ERASED = "author.erased"


@dataclass(frozen=True, slots=True)
class SecretEntry:
    """A signing secret, valid until ``until`` (epoch seconds; None: until rotated)."""

    secret: str
    until: float | None = None


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A receiver of events and what it asked for. Empty filters mean every product,
    group or rating; ``events`` is never empty."""

    endpoint_id: str
    url: str
    events: frozenset[EventType]
    product_ids: frozenset[str] = frozenset()
    group_ids: frozenset[str] = frozenset()
    ratings: frozenset[int] = frozenset()
    enabled: bool = True
    version: int = 1
    created_at: str = ""
    secrets: tuple[SecretEntry, ...] = ()
    disabled_reason: str | None = None

    def signing_secrets(self, now: float) -> list[str]:
        """The secrets a delivery is signed with now: the newest and any still in grace."""
        return [s.secret for s in self.secrets if s.until is None or s.until > now]

    def wants(self, event: Event) -> bool:
        """Whether this endpoint receives ``event`` (its kind and filters)."""
        if not self.enabled or event.type not in self.events:
            return False
        if event.scope == SHOP_SCOPE:
            return True
        if self.product_ids or self.group_ids:
            in_product = event.product_id in self.product_ids
            in_group = event.group_id is not None and event.group_id in self.group_ids
            if not (in_product or in_group):
                return False
        return not self.ratings or event.rating in self.ratings


@dataclass(frozen=True, slots=True)
class Event:
    """One webhook event: its id (the same in every process that derives it), type,
    scope (a product id, or ``SHOP_SCOPE``), when it happened and its data."""

    event_id: str
    type: EventType
    scope: str
    timestamp: str
    data: dict[str, Any] = field(default_factory=dict)
    sequence: int = 0

    @property
    def product_id(self) -> str | None:
        return None if self.scope == SHOP_SCOPE else self.scope

    @property
    def group_id(self) -> str | None:
        value = self.data.get("groupId")
        return value if isinstance(value, str) else None

    @property
    def rating(self) -> int | None:
        value = self.data.get("rating")
        return value if isinstance(value, int) else None

    def payload(self, previous: int | None) -> str:
        """The JSON body delivered: the event with its sequence numbers; ``previous`` is
        the number of the event this lane delivered (or gave up) before it."""
        data = {**self.data, "sequence": self.sequence, "previousSequence": previous}
        body = {"type": self.type.value, "timestamp": self.timestamp, "data": data}
        return json.dumps(body, separators=(",", ":"), sort_keys=True)


def event_id(item_key: Item, stream_sequence: str, kind: EventType) -> str:
    """``msg_`` and a digest of what every reader of the change sees alike."""
    parts = [item_key.get("PK", {}).get("S", ""), item_key.get("SK", {}).get("S", "")]
    raw = "\x1f".join([*parts, stream_sequence, kind.value]).encode()
    return "msg_" + hashlib.sha256(raw).hexdigest()[:32]


def new_secret() -> str:
    """A signing secret as Standard Webhooks writes them: ``whsec_`` and base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def new_endpoint_id() -> str:
    return "ep_" + secrets.token_hex(12)


def validate_endpoint_id(endpoint_id: object) -> str:
    if (
        not isinstance(endpoint_id, str)
        or not endpoint_id.startswith("ep_")
        or len(endpoint_id) != 27
        or not all(c in "0123456789abcdef" for c in endpoint_id[3:])
    ):
        raise InvalidInput("not an endpoint id")
    return endpoint_id


def seq_key(n: int) -> str:
    return str(n).zfill(SEQ_WIDTH)


# Keys.


def endpoint_key(endpoint_id: str) -> Item:
    return {"PK": {"S": ENDPOINTS_PK}, "SK": {"S": ENDPOINT_PREFIX + endpoint_id}}


def endpoint_count_key() -> Item:
    return {"PK": {"S": ENDPOINTS_PK}, "SK": {"S": ENDPOINT_COUNT_SK}}


def counter_key(scope: str) -> Item:
    return {"PK": {"S": SEQ_PREFIX + scope}, "SK": {"S": "SEQ"}}


def marker_key(eid: str) -> Item:
    return {"PK": {"S": MSG_PREFIX + eid}, "SK": {"S": "MSG"}}


def log_key(scope: str, sequence: int) -> Item:
    return {"PK": {"S": LOG_PREFIX + scope}, "SK": {"S": seq_key(sequence)}}


def lane_key(endpoint_id: str, scope: str) -> Item:
    return {"PK": {"S": LANE_PREFIX + endpoint_id}, "SK": {"S": scope}}


def due_key(endpoint_id: str, scope: str) -> Item:
    return {"PK": {"S": DUE_PK}, "SK": {"S": f"{endpoint_id}#{scope}"}}


def due_lane(item: Item) -> tuple[str, str]:
    endpoint_id, _, scope = item["SK"]["S"].partition("#")
    return endpoint_id, scope


def failed_key(endpoint_id: str, scope: str, sequence: int) -> Item:
    return {"PK": {"S": FAILED_PREFIX + endpoint_id}, "SK": {"S": f"{scope}#{seq_key(sequence)}"}}


# Endpoints as items.


def endpoint_to_item(e: Endpoint) -> Item:
    item: Item = {
        **endpoint_key(e.endpoint_id),
        "endpointId": {"S": e.endpoint_id},
        "url": {"S": e.url},
        "events": {"L": [{"S": t.value} for t in sorted(e.events, key=lambda t: t.value)]},
        "productIds": {"L": [{"S": p} for p in sorted(e.product_ids)]},
        "groupIds": {"L": [{"S": g} for g in sorted(e.group_ids)]},
        "ratings": {"L": [{"N": str(r)} for r in sorted(e.ratings)]},
        "enabled": {"BOOL": e.enabled},
        "version": {"N": str(e.version)},
        "createdAt": {"S": e.created_at},
        "secrets": {"L": [_secret_item(s) for s in e.secrets]},
    }
    if e.disabled_reason is not None:
        item["disabledReason"] = {"S": e.disabled_reason}
    return item


def _secret_item(s: SecretEntry) -> dict[str, Any]:
    entry: dict[str, Any] = {"secret": {"S": s.secret}}
    if s.until is not None:
        entry["until"] = {"N": repr(s.until)}
    return {"M": entry}


def item_to_endpoint(item: Item) -> Endpoint:
    secrets_ = tuple(
        SecretEntry(
            s["M"]["secret"]["S"],
            float(s["M"]["until"]["N"]) if "until" in s["M"] else None,
        )
        for s in item.get("secrets", {}).get("L", [])
    )
    reason = item.get("disabledReason", {}).get("S")
    return Endpoint(
        endpoint_id=item["endpointId"]["S"],
        url=item["url"]["S"],
        events=frozenset(EventType(v["S"]) for v in item["events"]["L"]),
        product_ids=frozenset(v["S"] for v in item.get("productIds", {}).get("L", [])),
        group_ids=frozenset(v["S"] for v in item.get("groupIds", {}).get("L", [])),
        ratings=frozenset(int(v["N"]) for v in item.get("ratings", {}).get("L", [])),
        enabled=item.get("enabled", {}).get("BOOL", True),
        version=int(item["version"]["N"]),
        created_at=item.get("createdAt", {}).get("S", ""),
        secrets=secrets_,
        disabled_reason=reason,
    )


def is_endpoint_item(item: Item) -> bool:
    sk: str = item.get("SK", {}).get("S", "")
    return sk.startswith(ENDPOINT_PREFIX)


# Events as log items.


def event_to_log_item(event: Event, expires_at: int) -> Item:
    return {
        **log_key(event.scope, event.sequence),
        "eventId": {"S": event.event_id},
        "eventType": {"S": event.type.value},
        "at": {"S": event.timestamp},
        "data": {"S": json.dumps(event.data, separators=(",", ":"), sort_keys=True)},
        "seq": {"N": str(event.sequence)},
        "expiresAt": {"N": str(expires_at)},
    }


def log_item_to_event(item: Item) -> Event:
    return Event(
        event_id=item["eventId"]["S"],
        type=EventType(item["eventType"]["S"]),
        scope=item["PK"]["S"][len(LOG_PREFIX) :],
        timestamp=item["at"]["S"],
        data=json.loads(item["data"]["S"]),
        sequence=int(item["seq"]["N"]),
    )
