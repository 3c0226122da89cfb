"""Console output helpers: how a long message is bounded for a terminal."""

from __future__ import annotations

from openclaw_dask.cli.output import MESSAGE_CHARS, MESSAGE_LINES, clipped


def test_a_short_message_is_left_as_it_is() -> None:
    text = "ValueError: one\ntwo"
    assert clipped(text) == (text, 0)
    assert clipped("x" * MESSAGE_CHARS) == ("x" * MESSAGE_CHARS, 0)


def test_one_long_line_keeps_its_head_and_tail() -> None:
    text = "head " + "x" * 20_000 + " tail"
    shown, cut = clipped(text)
    head, note, tail = shown.split("\n")
    assert head.startswith("head ") and tail.endswith(" tail")
    assert len(head) + len(tail) == MESSAGE_CHARS
    assert cut == len(text) - MESSAGE_CHARS
    assert note == f"[... {cut:,} characters left out ...]"


def test_many_lines_keep_whole_lines_at_both_ends() -> None:
    text = "".join(f"row {i}\n" for i in range(500))
    shown, cut = clipped(text)
    rows = shown.split("\n")
    assert len(rows) == MESSAGE_LINES + 1  # the note between head and tail
    assert rows[0] == "row 0" and rows[-1] == "row 499"
    head = MESSAGE_LINES * 3 // 4
    assert rows[head - 1] == f"row {head - 1}"
    gone = 500 - MESSAGE_LINES
    assert rows[head] == f"[... {gone} lines, {cut:,} characters left out ...]"
    assert cut == sum(len(f"row {i}\n") for i in range(head, 500 - (MESSAGE_LINES - head)))
