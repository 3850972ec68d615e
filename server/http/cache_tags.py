"""Cache tags on answers anyone may keep: ``Surrogate-Key`` (Fastly, Varnish's xkey;
space-separated) and ``Cache-Tag`` (Cloudflare, and CloudFront's tag invalidation;
comma-separated) name what the answer read (resolvers.read_set), so that a shared cache
may keep it long and drop it when one of those changes.

Bounded: at most ``MAX_TAGS`` tags (CloudFront keeps 50 a cached object) and
``MAX_TAG_BYTES`` bytes a header (Cloudflare takes 16 KB a header; headers of many KB
strain proxies). An answer that read more than that carries the one coarse tag ``all``
instead, which every change purges: never a partial list, which would leave it stale.
Tags are ASCII without spaces or commas (the id rules), 130 characters at most, under
every vendor's limit on one tag but Cloudflare's 120 (the purge of so long a tag there is
a purge of everything, server.purging.cdn). Cloudflare and CloudFront compare tags
without regard to case: ``p:Ab`` and ``p:ab`` purge each other there, which only drops
more.
"""

from __future__ import annotations

from collections.abc import Iterable

from resolvers.read_set import ALL

MAX_TAGS = 50
MAX_TAG_BYTES = 8 * 1024


def bounded(
    tags: Iterable[str], max_tags: int = MAX_TAGS, max_bytes: int = MAX_TAG_BYTES
) -> list[str]:
    """The tags an answer carries: its own, or ``[all]`` when they are more than the bounds
    allow (in count, or in bytes of the longer header, the comma-separated one)."""
    listed = list(dict.fromkeys(tags))
    if ALL in listed:
        return [ALL]
    size = sum(len(t) for t in listed) + max(0, len(listed) - 1)
    if len(listed) > max_tags or size > max_bytes:
        return [ALL]
    return listed


def tag_headers(tags: list[str]) -> dict[str, str]:
    """The headers that carry ``tags`` (none when there are none)."""
    if not tags:
        return {}
    return {"surrogate-key": " ".join(tags), "cache-tag": ",".join(tags)}
