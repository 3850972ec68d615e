"""Progress on stderr: on a terminal, one line redrawn once per percent and finished at the
end; in a log (not a terminal), whole lines now and then, never a carriage return."""

from __future__ import annotations

import io

import pytest

from server.dev.progress import note, progress_bar, progress_count


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_redraws_once_per_percent_and_ends_the_line() -> None:
    terminal = Terminal()
    show = progress_bar(1000, "loading", stream=terminal)
    for done in range(1, 1001):
        show(done)
    err = terminal.getvalue()
    assert err.count("\r") == 101  # 0 % (the first item), 1 %, ... 100 %: not 1,000
    assert err.endswith("\rloading [" + "#" * 30 + "] 1000/1000\n")


def test_small_totals_show_every_step() -> None:
    terminal = Terminal()
    show = progress_bar(3, "x", stream=terminal)
    for done in (1, 2, 3):
        show(done)
    assert terminal.getvalue() == (
        "\rx [##########--------------------] 1/3"
        "\rx [####################----------] 2/3"
        "\rx [##############################] 3/3\n"
    )


def test_a_log_gets_a_whole_line_per_tenth(capsys: pytest.CaptureFixture[str]) -> None:
    # stderr captured, as under docker or systemd: not a terminal.
    show = progress_bar(1000, "loading")
    for done in range(1, 1001):
        show(done)
    lines = capsys.readouterr().err.splitlines(keepends=True)
    assert "\r" not in "".join(lines)
    assert [line.split()[-1] for line in lines] == [f"{n}/1000" for n in range(100, 1001, 100)]
    assert lines[-1] == "loading [" + "#" * 30 + "] 1000/1000\n"


def test_a_log_of_a_small_total_gets_each_step(capsys: pytest.CaptureFixture[str]) -> None:
    show = progress_bar(3, "x")
    for done in (1, 2, 3):
        show(done)
    assert capsys.readouterr().err == (
        "x [##########--------------------] 1/3\n"
        "x [####################----------] 2/3\n"
        "x [##############################] 3/3\n"
    )


def test_a_count_redraws_on_a_terminal_and_ends_its_line() -> None:
    terminal = Terminal()
    count = progress_count("scanned {} items", stream=terminal)
    for scanned in (100, 250, 300):
        count(scanned)
    count.end()
    assert terminal.getvalue() == ("\rscanned 100 items\rscanned 250 items\rscanned 300 items\n")


def test_a_count_in_a_log_says_milestones_and_the_total(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Without a total, a line as the count passes 1, 2, 5, 10, 20, 50, 100...: a few lines
    # however long it runs, and the total at the end.
    count = progress_count("scanned {} items")
    for scanned in range(0, 120_001, 300):
        count(scanned)
    count.end()
    err = capsys.readouterr().err
    assert "\r" not in err
    assert [int(line.split()[1]) for line in err.splitlines()] == [
        300,
        600,
        1200,
        2100,
        5100,
        10200,
        20100,
        50100,
        100200,
        120000,
    ]


def test_a_count_that_ends_on_a_milestone_says_it_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    count = progress_count("scanned {} items")
    count(2)
    count.end()
    count.end()
    assert capsys.readouterr().err == "scanned 2 items\n"


def test_a_note_clears_the_bar_on_a_terminal_only(capsys: pytest.CaptureFixture[str]) -> None:
    terminal = Terminal()
    note("line 3: not JSON", stream=terminal)
    assert terminal.getvalue() == "\r" + "line 3: not JSON".ljust(60) + "\n"
    note("line 3: not JSON")
    assert capsys.readouterr().err == "line 3: not JSON\n"
