"""The progress bar: one redraw per percent, a finished line at the end."""

from __future__ import annotations

import pytest

from server.dev.progress import progress_bar


def test_redraws_once_per_percent_and_ends_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    show = progress_bar(1000, "loading")
    for done in range(1, 1001):
        show(done)
    err = capsys.readouterr().err
    assert err.count("\r") == 101  # 0 % (the first item), 1 %, ... 100 %: not 1,000
    assert err.endswith("\rloading [" + "#" * 30 + "] 1000/1000\n")


def test_small_totals_show_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    show = progress_bar(3, "x")
    for done in (1, 2, 3):
        show(done)
    assert capsys.readouterr().err == (
        "\rx [##########--------------------] 1/3"
        "\rx [####################----------] 2/3"
        "\rx [##############################] 3/3\n"
    )
