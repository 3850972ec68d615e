"""Per-key lanes (storage.base.lanes): one task per key at a time, taking what waits in rounds."""

from __future__ import annotations

import asyncio

from storage.base.lanes import Lane, Lanes


async def test_what_joins_while_a_round_runs_waits_for_the_next_round() -> None:
    lanes: Lanes[int] = Lanes()
    rounds: list[list[int]] = []
    gate = asyncio.Event()

    async def serve(lane: Lane[int]) -> None:
        while lane.waiting:
            taken, lane.waiting[:] = list(lane.waiting), []
            rounds.append(taken)
            await gate.wait()

    lanes.join("a", 1, serve)
    await asyncio.sleep(0)  # the first round takes 1 and waits at the gate
    for n in (2, 3, 4):
        lanes.join("a", n, serve)
    assert lanes.leave("a", 3)  # given up before its turn
    assert not lanes.leave("a", 1)  # taken already
    lanes.join("b", 9, serve)  # another key has a task of its own
    gate.set()
    await lanes.drain()
    assert rounds == [[1], [9], [2, 4]]
    assert len(lanes) == 0


async def test_a_failed_round_starts_again_for_those_left() -> None:
    lanes: Lanes[int] = Lanes()
    served: list[int] = []
    failed = False

    async def serve(lane: Lane[int]) -> None:
        nonlocal failed
        if not failed:
            failed = True
            raise RuntimeError("a bug")
        served.extend(lane.waiting)
        lane.waiting.clear()

    lanes.join("a", 1, serve)
    await asyncio.sleep(0.01)
    await lanes.drain()
    assert served == [1]
    assert len(lanes) == 0
