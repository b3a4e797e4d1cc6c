"""Semantic versions (semver.org 2.0.0), as device ``version`` attributes and
CEL's ``semver()`` read them: ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``, no
leading zeros in numeric parts; ordered by precedence (build ignored)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

# [0-9], never \d: semver's digits are ASCII, \d (and str.isdigit) any
# Unicode digit ("1\u0660.0.0" would read as 10.0.0)
_PRE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_NUMERIC_ID = re.compile(r"[0-9]+")
_SEMVER_RE = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    rf"(?:-({_PRE_ID}(?:\.{_PRE_ID})*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


@total_ordering
@dataclass(frozen=True)
class Semver:
    major: int
    minor: int
    patch: int
    pre: tuple = ()  # identifiers: int or str
    build: str = ""

    def _key(self):
        # a release sorts after its pre-releases; numeric identifiers sort
        # before alphanumeric ones
        pre = tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def __eq__(self, other):
        return isinstance(other, Semver) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __lt__(self, other):
        if not isinstance(other, Semver):
            return NotImplemented
        return self._key() < other._key()

    def compare(self, other: Semver) -> int:
        a, b = self._key(), other._key()
        return (a > b) - (a < b)

    def __str__(self):
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(p) for p in self.pre)
        if self.build:
            text += "+" + self.build
        return text


def parse_semver(text: str) -> Semver:
    """``text`` -> :class:`Semver`; ValueError when it is not semver 2.0.0."""
    m = _SEMVER_RE.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"invalid semantic version {text!r}")
    pre = tuple(int(p) if _NUMERIC_ID.fullmatch(p) else p for p in m.group(4).split(".")) if m.group(4) else ()
    return Semver(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre, m.group(5) or "")
