"""The Standard Webhooks headers of a delivery, signed with the ``standardwebhooks``
library: one ``v1,`` signature per secret in use (the newest, and one in its grace period
after a rotation), space-separated, as the specification allows."""

from __future__ import annotations

from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook


def signed_headers(
    message_id: str, body: str, secrets: list[str], at: datetime | None = None
) -> dict[str, str]:
    """``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` for ``body``."""
    when = at if at is not None else datetime.now(UTC)
    signatures = [Webhook(secret).sign(message_id, when, body) for secret in secrets]
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(when.timestamp())),
        "webhook-signature": " ".join(signatures),
    }
