"""The export's files beside its output: a part per scan segment, the checkpoint that says
how much of each part is whole and where its scan stands, and the assembly file renamed
onto the output at the end (``storage.ops.feeds.export`` says what they guarantee).

The checkpoint is JSON, replaced atomically (written beside it, then renamed), so a crash
leaves the one before or the one after, never a mix. A part is only trusted up to the
length its checkpoint records; a part shorter than that (a machine crash lost what the
system had not written) makes the whole export start over.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

from storage.base.types import Item
from storage.ops.feeds.google import FEED_CLOSE, REVIEWS_CLOSE, REVIEWS_OPEN, Publisher, head

CHECKPOINT_VERSION = 1
COPY_CHUNK = 1 << 20  # bytes copied at a time while assembling


@dataclass(slots=True)
class SegmentState:
    """Where one segment's scan and part file stand after its last whole page."""

    position: Item | None = None  # the scan's LastEvaluatedKey
    bytes: int = 0
    reviews: int = 0
    withdrawn: int = 0
    unmatched: int = 0  # reviews whose product the catalogue has no line for
    scanned: int = 0
    done: bool = False


@dataclass(slots=True)
class Checkpoint:
    fingerprint: str
    cutoff: str
    segments: list[SegmentState] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": CHECKPOINT_VERSION,
                "fingerprint": self.fingerprint,
                "cutoff": self.cutoff,
                "segments": [asdict(s) for s in self.segments],
            }
        )

    @classmethod
    def from_json(cls, raw: str) -> Checkpoint | None:
        try:
            data = json.loads(raw)
            if data.get("version") != CHECKPOINT_VERSION:
                return None
            states = [SegmentState(**s) for s in data["segments"]]
            return cls(str(data["fingerprint"]), str(data["cutoff"]), states)
        except (ValueError, TypeError, KeyError, AttributeError):
            return None  # unreadable: start over


def work_paths(output: Path) -> tuple[Path, Path]:
    """The checkpoint file and the assembly file beside ``output``."""
    return (
        output.with_name(output.name + ".checkpoint"),
        output.with_name(output.name + ".tmp"),
    )


def part_path(output: Path, segment: int) -> Path:
    return output.with_name(f"{output.name}.part-{segment}")


def resumable(path: Path, fingerprint: str, output: Path, segments: int) -> Checkpoint | None:
    """The checkpoint of a stopped run of these arguments whose parts are whole."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    found = Checkpoint.from_json(raw)
    if found is None or found.fingerprint != fingerprint or len(found.segments) != segments:
        return None
    for k, state in enumerate(found.segments):
        part = part_path(output, k)
        size = part.stat().st_size if part.exists() else 0
        if size < state.bytes:
            return None  # a part lost what the checkpoint counts (a machine crash): redo
    return found


def save(path: Path, checkpoint: Checkpoint) -> None:
    spare = path.with_name(path.name + ".new")
    spare.write_text(checkpoint.to_json(), encoding="utf-8")
    os.replace(spare, path)


def assemble(
    output: Path, publisher: Publisher, checkpoint: Checkpoint, max_bytes: int | None = None
) -> list[tuple[Path, int]]:
    """Head, parts and tail into files renamed into place whole: ``output`` itself when the
    feed fits in ``max_bytes`` (None: any size), otherwise numbered files beside it
    (``feed-1.xml``, ``feed-2.xml``...), each a whole feed of at most ``max_bytes`` split
    between reviews. Numbered files a former run left beyond these are removed, so that a
    fetch of the folder never sees a review twice. The files written, with their sizes."""
    frame = len(_opening(publisher)) + len(_CLOSING)
    body = sum(s.bytes for s in checkpoint.segments)
    if max_bytes is None or frame + body <= max_bytes:
        with _whole(output) as out:
            out.write(head(publisher).encode("utf-8"))
            if any(s.reviews for s in checkpoint.segments):
                out.write(REVIEWS_OPEN.encode())
                for k, state in enumerate(checkpoint.segments):
                    _copy(part_path(output, k), state.bytes, out)
                out.write(REVIEWS_CLOSE.encode())
            out.write(FEED_CLOSE.encode())
        written = [(output, output.stat().st_size)]
    else:
        written = _split(output, publisher, checkpoint, max_bytes)
    _remove_numbered(output, after=0 if len(written) == 1 else len(written))
    return written


# A review element starts so, and nowhere else: text and attributes write '<' as '&lt;'.
_REVIEW_START = b"    <review>"
_CLOSING = (REVIEWS_CLOSE + FEED_CLOSE).encode()


def _opening(publisher: Publisher) -> bytes:
    return (head(publisher) + REVIEWS_OPEN).encode("utf-8")


def numbered(output: Path, n: int) -> Path:
    """The ``n``-th file (from 1) of a feed split beside ``output``."""
    return output.with_name(f"{output.stem}-{n}{output.suffix}")


def _split(
    output: Path, publisher: Publisher, checkpoint: Checkpoint, max_bytes: int
) -> list[tuple[Path, int]]:
    opening = _opening(publisher)
    room = max_bytes - len(opening) - len(_CLOSING)
    written: list[tuple[Path, int]] = []
    files = ExitStack()
    out: BinaryIO | None = None
    used = 0
    with files:
        for k, state in enumerate(checkpoint.segments):
            for review in _reviews(part_path(output, k), state.bytes):
                if len(review) > room:
                    raise ValueError(f"a review of {len(review)} bytes cannot fit {max_bytes}")
                if out is None or used + len(review) > room:
                    if out is not None:
                        out.write(_CLOSING)
                        files.close()  # synced and renamed into place
                        written.append(_stat(numbered(output, len(written) + 1)))
                    out = files.enter_context(_whole(numbered(output, len(written) + 1)))
                    out.write(opening)
                    used = 0
                out.write(review)
                used += len(review)
        if out is not None:
            out.write(_CLOSING)
    written.append(_stat(numbered(output, len(written) + 1)))
    return written


def _stat(path: Path) -> tuple[Path, int]:
    return path, path.stat().st_size


@contextmanager
def _whole(path: Path) -> Iterator[BinaryIO]:
    """A file written beside ``path``, synced and renamed onto it when the block ends
    without an error (a reader of ``path`` sees the old file or the new one, whole)."""
    spare = path.with_name(path.name + ".tmp")
    with spare.open("wb") as out:
        yield out
        out.flush()
        os.fsync(out.fileno())
    os.replace(spare, path)


def _reviews(part: Path, length: int) -> Iterator[bytes]:
    """The review elements of a part's first ``length`` bytes, one at a time (a chunk of
    the file and the review being cut from it in memory, no more)."""
    if not length:
        return
    with part.open("rb") as source:
        remaining, buffer = length, b""
        while remaining:
            chunk = source.read(min(COPY_CHUNK, remaining))
            if not chunk:
                raise OSError(f"{part} is shorter than its checkpoint says")
            remaining -= len(chunk)
            buffer += chunk
            start, cut = 0, buffer.find(_REVIEW_START, 1)
            while cut != -1:
                yield buffer[start:cut]
                start, cut = cut, buffer.find(_REVIEW_START, cut + 1)
            buffer = buffer[start:]
        if buffer:
            yield buffer


def _remove_numbered(output: Path, *, after: int) -> None:
    n = after + 1
    while numbered(output, n).exists():
        numbered(output, n).unlink()
        n += 1


def _copy(part: Path, length: int, out: BinaryIO) -> None:
    if not length:
        return
    with part.open("rb") as source:
        remaining = length
        while remaining:
            chunk = source.read(min(COPY_CHUNK, remaining))
            if not chunk:
                raise OSError(f"{part} is shorter than its checkpoint says")
            out.write(chunk)
            remaining -= len(chunk)


def copy_out(path: Path, out: BinaryIO) -> None:
    """Copy a written feed to a stream (stdout), a chunk at a time."""
    with path.open("rb") as source:
        shutil.copyfileobj(source, out, COPY_CHUNK)
