"""A tiny document model (headings, paragraphs, lists, tables, figures, code) rendered to
Markdown and to one self-contained HTML file. Both renderings come from the same blocks,
so the two reports say the same thing; neither holds a timestamp."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass


@dataclass(frozen=True)
class Heading:
    """A section heading (level 1–3)."""

    level: int
    text: str


@dataclass(frozen=True)
class Para:
    """A paragraph; `strong` ones are warnings set in bold."""

    text: str
    strong: bool = False


@dataclass(frozen=True)
class Bullets:
    """An unordered list of plain-text items."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """A table with a caption shown above it and an optional footnote below."""

    caption: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    footnote: str = ""


@dataclass(frozen=True)
class Figure:
    """A PNG figure: written next to report.md, embedded in report.html."""

    name: str
    png: bytes
    caption: str


@dataclass(frozen=True)
class Code:
    """A preformatted block (the run's config)."""

    text: str


@dataclass(frozen=True)
class Fold:
    """Items behind a disclosure (`<details>`): present, but not on the first screen."""

    title: str
    items: tuple[str, ...]


@dataclass(frozen=True)
class Row:
    """Blocks side by side where the page is wide enough (HTML); one after another in
    Markdown."""

    blocks: tuple[Table | Figure, ...]


Block = Heading | Para | Bullets | Table | Figure | Code | Fold | Row

FIGURE_DIR = "report_figures"


def _md_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: list[Block]) -> str:
    """Markdown; figures are linked as `report_figures/<name>.png`."""
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Row):
            out.append(to_markdown(list(block.blocks)).rstrip("\n"))
            continue
        if isinstance(block, Fold):
            items = "\n".join(f"- {item}" for item in block.items)
            out.append(f"<details><summary>{block.title}</summary>\n\n{items}\n\n</details>")
            continue
        if isinstance(block, Heading):
            out.append(f"{'#' * block.level} {block.text}")
        elif isinstance(block, Para):
            out.append(f"**{block.text}**" if block.strong else block.text)
        elif isinstance(block, Bullets):
            out.append("\n".join(f"- {item}" for item in block.items))
        elif isinstance(block, Table):
            lines = [f"*{block.caption}*", "",
                     "| " + " | ".join(_md_cell(h) for h in block.headers) + " |",
                     "|" + "|".join("---" for _ in block.headers) + "|"]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in block.rows]
            if block.footnote:
                lines += ["", block.footnote]
            out.append("\n".join(lines))
        elif isinstance(block, Figure):
            out.append(f"![{block.caption}]({FIGURE_DIR}/{block.name}.png)")
        elif isinstance(block, Code):
            out.append(f"```json\n{block.text}\n```")
    return "\n\n".join(out) + "\n"


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 72rem;
       margin: 2rem auto; padding: 0 1rem; color: #1b1b1b; line-height: 1.45; }
h1 { border-bottom: 2px solid #444; padding-bottom: .3rem; }
h2 { border-bottom: 1px solid #bbb; padding-bottom: .2rem; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: .4rem 0 1.2rem; font-size: .9rem; }
caption { caption-side: top; text-align: left; font-style: italic; padding: .3rem 0; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f2f2f2; }
.footnote { font-size: .85rem; color: #555; margin-top: -.8rem; }
.warn { background: #fff4e5; border-left: 4px solid #e08a00; padding: .5rem .8rem; }
figure { margin: 1rem 0; }
figcaption { font-size: .85rem; color: #555; }
img { max-width: 100%; height: auto; }
pre { background: #f6f6f6; padding: .6rem; overflow-x: auto; font-size: .8rem; }
.row { display: flex; flex-wrap: wrap; gap: 1.2rem; align-items: flex-start;
       width: 98vw; max-width: 120rem; margin-left: calc(50% - 49vw); }
.row table { font-size: .75rem; }
.row th, .row td { padding: .1rem .3rem; }
.row .cell { flex: 0 0 auto; width: min-content; }
.row td { white-space: nowrap; }
.row .cell:last-child { flex: 1 1 28rem; min-width: 28rem; width: auto; }
.row figure { margin: 0; }
.row .footnote { margin-top: 0; }
details { margin: .5rem 0 1rem; }
summary { cursor: pointer; color: #444; }
""".strip()


def to_html(blocks: list[Block], title: str) -> str:
    """One HTML file with inline CSS and base64 PNG figures: no external resources."""
    return _html_page(_html_blocks(blocks), title)


def _html_blocks(blocks: list[Block] | tuple[Block, ...]) -> list[str]:
    esc = html.escape
    body: list[str] = []
    for block in blocks:
        if isinstance(block, Row):
            cells = "".join(f'<div class="cell">{"".join(_html_blocks((b,)))}</div>'
                            for b in block.blocks)
            body.append(f'<div class="row">{cells}</div>')
        elif isinstance(block, Fold):
            items = "".join(f"<li>{esc(item)}</li>" for item in block.items)
            body.append(f"<details><summary>{esc(block.title)}</summary><ul>{items}</ul>"
                        "</details>")
        elif isinstance(block, Heading):
            body.append(f"<h{block.level}>{esc(block.text)}</h{block.level}>")
        elif isinstance(block, Para):
            body.append(f'<p class="warn"><strong>{esc(block.text)}</strong></p>'
                        if block.strong else f"<p>{esc(block.text)}</p>")
        elif isinstance(block, Bullets):
            items = "".join(f"<li>{esc(item)}</li>" for item in block.items)
            body.append(f"<ul>{items}</ul>")
        elif isinstance(block, Table):
            head = "".join(f"<th>{esc(h)}</th>" for h in block.headers)
            rows = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                           for row in block.rows)
            body.append(f"<table><caption>{esc(block.caption)}</caption><thead><tr>{head}"
                        f"</tr></thead><tbody>{rows}</tbody></table>")
            if block.footnote:
                body.append(f'<p class="footnote">{esc(block.footnote)}</p>')
        elif isinstance(block, Figure):
            data = base64.b64encode(block.png).decode("ascii")
            body.append(f'<figure><img alt="{esc(block.caption)}" '
                        f'src="data:image/png;base64,{data}"><figcaption>'
                        f"{esc(block.caption)}</figcaption></figure>")
        elif isinstance(block, Code):
            body.append(f"<pre>{esc(block.text)}</pre>")
    return body


def _html_page(body: list[str], title: str) -> str:
    esc = html.escape
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{esc(title)}</title>\n<style>\n{_CSS}\n</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
