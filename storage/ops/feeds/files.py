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


def assemble(output: Path, publisher: Publisher, checkpoint: Checkpoint) -> int:
    """Head, parts and tail into the assembly file, synced and renamed onto ``output``."""
    _, assembly = work_paths(output)
    total = sum(s.reviews for s in checkpoint.segments)
    with assembly.open("wb") as out:
        out.write(head(publisher).encode("utf-8"))
        if total:
            out.write(REVIEWS_OPEN.encode())
            for k, state in enumerate(checkpoint.segments):
                _copy(part_path(output, k), state.bytes, out)
            out.write(REVIEWS_CLOSE.encode())
        out.write(FEED_CLOSE.encode())
        out.flush()
        os.fsync(out.fileno())
        size = out.tell()
    os.replace(assembly, output)
    return size


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
