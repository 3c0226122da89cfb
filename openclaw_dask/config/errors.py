"""Problems found in user input, and the one exception that carries them all.

Every check in the config and workflow layers reports :class:`Problem` objects instead of raising
at the first one, so a user sees every mistake of a file at once. The CLI turns a
:class:`ConfigError` into one line per problem and exit code 2, never a traceback.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: Longest quoted user value in a message. A value pasted by mistake (a whole file, a generated
#: list) would otherwise make one problem line as long as the value itself: megabytes.
QUOTE_LIMIT = 80
#: characters a message shows escaped (a newline as \\n), so that it stays one line
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input.

    Parameters
    ----------
    message
        What is wrong and what was expected, in one sentence.
    key
        Dotted key path (``parallel.thread_pool_size``), or ``""`` for the whole file.
    file
        File the value came from, if any.
    line
        1-based line in ``file``, if known.
    origin
        Where a value came from when it is not a file (``env OPENCLAW_X__Y``, ``--set``).
    """

    message: str
    key: str = ""
    file: str | None = None
    line: int | None = None
    origin: str | None = None

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        elif self.origin:
            where = f"{self.origin}: "
        # a dotted key is user input too (an unknown key may be any length, or hold a newline
        # that would break the one line in two)
        shown = CONTROL_RE.sub(lambda m: repr(m.group())[1:-1], self.key)
        key = f"{shorten(shown, 2 * QUOTE_LIMIT)}: " if self.key else ""
        return f"{where}{key}{self.message}"


class ConfigError(Exception):
    """Bad user input: one or more :class:`Problem` objects.

    Parameters
    ----------
    problems
        Every problem found; at least one.
    partial
        The config as far as it could be read, if reading got that far.
    """

    def __init__(self, problems: Iterable[Problem], partial: Any = None) -> None:
        self.problems = list(problems)
        #: the config as far as it could be read (invalid values left at their defaults), so
        #: that later checks (hardware) can still report their problems in the same run
        self.partial = partial
        if not self.problems:
            raise ValueError("ConfigError needs at least one problem")
        super().__init__("\n".join(str(p) for p in self.problems))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest choice, or ``""`` when none is close.

    Case is ignored (``SEED`` finds ``seed``: difflib alone scores it 0), and ``word`` itself
    is never suggested.
    """
    close = closest(word, choices)
    return f"; did you mean '{close}'?" if close else ""


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice :func:`did_you_mean` suggests for ``word``, or ``None``."""
    folded = {str(c).casefold(): str(c) for c in choices if str(c) != word}
    close = difflib.get_close_matches(word.casefold(), list(folded), n=1, cutoff=0.6)
    return folded[close[0]] if close else None


def shorten(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters when longer, saying how long it was.

    Parameters
    ----------
    text
        What a message quotes: a user's value as written or its ``repr``.
    limit
        Characters to keep.

    Returns
    -------
    str
        ``text`` itself, or its first ``limit`` characters, ``...`` and its full length.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def quote(value: Any) -> str:
    """``repr(value)`` for a message, shortened by :func:`shorten`."""
    return shorten(repr(value))


def not_a_file(path: str, shown: str | None = None) -> str:
    """Why ``path``, which is not a file, cannot be read: missing, or a folder.

    ``shown`` is how the message names it (the path as the user wrote it; default ``path``).
    """
    name = shown or path
    if os.path.isdir(os.path.expanduser(path)):
        return f"is a folder, not a file: {name}"
    return f"file not found: {name}{nearby(path, name)}"


def nearby(path: str, shown: str | None = None, folders: bool = False) -> str:
    """``"; did you mean 'dir/name'?"`` for a file beside the missing ``path`` whose name is
    close to its own (``climat.yaml``, ``openclaw.conf``), else ``""``. Folders are not
    suggested, a file was asked for; with ``folders``, only folders are (a mistyped run id).

    ``shown`` is how the message names ``path``; the suggestion keeps its folder part as
    written. A folder that cannot be listed suggests nothing.
    """
    shown = (shown or path).rstrip("/") if folders else shown
    folder, name = os.path.split(os.path.expanduser(path.rstrip("/") if folders else path))
    try:
        siblings = [
            entry.name
            for entry in os.scandir(folder or ".")
            if (entry.is_dir() if folders else entry.is_file())
        ]
    except OSError:
        return ""
    match = closest(name, siblings)
    # the names' stems must be near too: a shared ".yaml" made weather.yml 'climate.yaml'
    stems = (name.partition(".")[0].casefold(), (match or "").partition(".")[0].casefold())
    if match is None or difflib.SequenceMatcher(None, *stems).ratio() < 0.6:
        return ""
    return f"; did you mean '{os.path.join(os.path.dirname(shown or path), match)}'?"
