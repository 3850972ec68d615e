from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from storage.reads.merge import Stream, merge


def test_merges_descending_and_stops_at_want() -> None:
    result = merge([Stream(["9", "5", "1"], True), Stream(["8", "7"], True)], 4, descending=True)
    assert result.picks == ((0, 0), (1, 0), (1, 1), (0, 1))
    assert result.complete
    assert result.consumed == (2, 2)


def test_stops_where_a_stream_that_may_have_more_runs_out() -> None:
    # Stream 1 returned "8" but may hold "6": "5" cannot be emitted yet.
    result = merge([Stream(["9", "5"], True), Stream(["8"], False)], 3, descending=True)
    assert result.picks == ((0, 0), (1, 0))
    assert not result.complete


def test_exhausted_streams_never_block() -> None:
    result = merge([Stream([], True), Stream(["3", "2"], True)], 5, descending=True)
    assert result.picks == ((1, 0), (1, 1))
    assert result.complete


def test_ascending() -> None:
    result = merge([Stream(["1", "4"], True), Stream(["2", "3"], True)], 4, descending=False)
    assert result.picks == ((0, 0), (1, 0), (1, 1), (0, 1))


def _distinct_sorted(streams: list[list[int]], descending: bool) -> list[list[str]]:
    """Streams of sort keys, each sorted, no key in two streams (as GSISKs are)."""
    seen: set[int] = set()
    out = []
    for s in streams:
        own = [k for k in s if k not in seen]
        seen.update(own)
        out.append(sorted((f"{k:05d}" for k in own), reverse=descending))
    return out


_STREAMS = st.lists(
    st.lists(st.integers(0, 10_000), max_size=15, unique=True), min_size=1, max_size=5
)


@given(_STREAMS, st.integers(0, 40), st.booleans())
def test_merge_of_complete_streams_equals_sorting(
    streams: list[list[int]], want: int, descending: bool
) -> None:
    cleaned = _distinct_sorted(streams, descending)
    result = merge([Stream(s, True) for s in cleaned], want, descending=descending)
    merged = [cleaned[i][j] for i, j in result.picks]
    expected = sorted((k for s in cleaned for k in s), reverse=descending)[:want]
    assert merged == expected
    assert result.complete


@given(_STREAMS, st.lists(st.integers(0, 15), min_size=5, max_size=5), st.integers(1, 40))
def test_partial_streams_emit_only_a_correct_prefix(
    streams: list[list[int]], cut: list[int], want: int
) -> None:
    full = _distinct_sorted(streams, descending=True)
    partial = [Stream(s[: cut[i]], cut[i] >= len(s)) for i, s in enumerate(full)]
    result = merge(partial, want, descending=True)
    merged = [partial[i].keys[j] for i, j in result.picks]
    truth = sorted((k for s in full for k in s), reverse=True)
    assert merged == truth[: len(merged)]
    if result.complete:
        assert len(merged) == min(want, len(truth))


def test_a_stream_read_through_a_bound_does_not_block_before_it() -> None:
    # Stream 1 holds nothing more at or above "6", so "7" and "6" may be emitted...
    streams = [Stream(["9", "7", "6", "2"], True), Stream(["8"], False, bound="6")]
    result = merge(streams, 5, descending=True)
    assert [streams[i].keys[j] for i, j in result.picks] == ["9", "8", "7", "6"]
    # ...but not "2": stream 1 may hold items between "6" and "2".
    assert not result.complete


def test_bound_ascending() -> None:
    streams = [Stream(["1", "3", "5"], True), Stream([], False, bound="3")]
    result = merge(streams, 3, descending=False)
    assert [streams[i].keys[j] for i, j in result.picks] == ["1", "3"]
    assert not result.complete
