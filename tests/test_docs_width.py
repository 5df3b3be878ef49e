"""Code blocks of the documentation fit the content column: no line of a fenced block in docs/ is longer than
``WIDTH`` characters.

The width: Material's content column, with both sidebars shown, is the page (``.md-grid``, 76rem in
``docs/stylesheets/extra.css``, 1,520 px at the theme's 20 px rem) less the two sidebars (12.1rem each) and the
padding, about 950 px; code is set at 0.85 × 16 px in a monospace font of about 0.6 em per character, so about
115 characters fit; 100 leaves room for the copy button and scroll bar.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 100
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
PAGES = sorted((ROOT / "docs").rglob("*.md"))


def long_lines(text: str, width: int = WIDTH) -> list[tuple[int, int]]:
    """``(line number, length)`` of every line of a fenced block of a Markdown text longer than ``width``."""
    found = []
    for match in FENCE.finditer(text):
        first = text.count("\n", 0, match.start(2)) + 1
        found += [(first + i, len(line)) for i, line in enumerate(match.group(2).splitlines()) if len(line) > width]
    return found


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_fit_the_content_width(path: Path) -> None:
    found = long_lines(path.read_text(encoding="utf-8"))
    assert not found, "\n".join(f"{path.relative_to(ROOT)}:{n}: {length} characters (at most {WIDTH})"
                                for n, length in found)


def test_a_long_code_line_is_found() -> None:
    text = "intro " + "x" * 200 + "\n\n```bash\nshort\n" + "y" * 101 + "\n```\n"
    assert long_lines(text) == [(5, 101)]


def test_the_stylesheet_sets_the_width_the_test_assumes() -> None:
    css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    assert re.search(r"\.md-grid\s*\{\s*max-width:\s*76rem", css)
    assert "stylesheets/extra.css" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
