"""Committed files speak of the code as it is: no machine paths, no work sessions, no issue numbers.

History belongs in CHANGELOG.md; tests may name what they guard. Every other tracked text file is checked.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXEMPT = ("tests/", "CHANGELOG.md")
DATA_SUFFIXES = (".jsonl", ".png")  # shipped datasets (tweets carry hashtags such as #2) and images

# (what is wrong, pattern); case-insensitive, matched line by line
RULES = (
    ("absolute machine path", re.compile(r"(?<![\w.~$-])/(?:work|home)/")),
    ("issue number", re.compile(r"\bissues?\s+#?\d+|\bissues?\s+\d+\s*(?:,|and)\s*\d+")),
    ("issue number", re.compile(r"(?<![\w&#/])(?<!setfit )(?<!setfit's )#\d{1,5}\b(?![0-9a-f])")),
    ("work session", re.compile(r"\bsessions?\s+\d+\b")),
    ("work session", re.compile(r"\b(?:this|that|earlier|previous|later|next|last|each|a|one|other)\s+sessions?\b"
                                r"(?!\s*(?:options|config|object|=)|[.(])")),
    ("work session", re.compile(r"\bsessions?\s+(?:before|after|that\s+wrote)\b")),
    ("history wording", re.compile(r"\bas before\b|\(before\)|\bbefore\s+(?:issue|session|the redesign)\b")),
)


def tracked_text_files() -> list[Path]:
    """The repository's tracked files outside the exempt ones, text only."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    paths = [ROOT / name for name in out.decode().split("\0") if name and not name.startswith(EXEMPT)]
    return [p for p in paths if p.is_file() and not p.name.endswith(DATA_SUFFIXES)
            and b"\0" not in p.read_bytes()[:8192]]


def offences(text: str) -> list[str]:
    """``"line N: what (matched text)"`` for every line of ``text`` that breaks a rule."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in RULES:
            match = pattern.search(line.lower())
            if match:
                found.append(f"line {number}: {what} ({match.group(0)!r})")
    return found


@pytest.mark.parametrize("line", [
    "    --setfit-python /work/venv-setfit/bin/python",
    "model = '/home/alice/models/minilm'",
    "the figures of issue 20 and issues 10, 20",
    "Fixed in #20.",
    "Run in session 5 on the shared VM.",
    "not measured in this session (machine time)",
    "the head is refitted as before",
    "| x[idx] (before) | 24.61 |",
])
def test_offending_lines_are_found(line: str) -> None:
    assert offences(line), line


@pytest.mark.parametrize("line", [
    "session, tokenizer = model.session, model.tokenizer",
    "self.session = Session(args, backend, model)",
    "options.add_session_config_entry('session.intra_op.allow_spinning', '0')",
    "setfit #407 (a setfit issue) is why the migration converts the head",
    "before anything is read or written",
    "--data-dir ../shared/data and ~/work/data",
    "colour #1f77b4",
])
def test_ordinary_lines_pass(line: str) -> None:
    assert not offences(line), offences(line)


def test_tracked_files_have_no_machine_paths_sessions_or_issue_numbers() -> None:
    bad = {}
    for path in tracked_text_files():
        found = offences(path.read_text(encoding="utf-8", errors="replace"))
        if found:
            bad[str(path.relative_to(ROOT))] = found[:5]
    assert not bad, "history goes to CHANGELOG.md, paths are relative or arguments: " + repr(bad)
