"""MkDocs hook: the repository files the pages link to as `../PATH` (the CI workflow, the
composite action), published beside the pages, so that one link works on GitHub (the
file in the repository) and on the site (the file served there) and the file exists once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
# Repository path -> where the site serves it.
PUBLISHED = {
    "examples/ci/github-actions.yml": "examples/ci/github-actions.yml",
    "action.yml": "action.yml",
}


def on_files(files: Files, config: Any) -> Files:
    for source, uri in PUBLISHED.items():
        files.append(File.generated(config, uri, abs_src_path=str(ROOT / source)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    # A page in docs/ links `../action.yml`; on the site the file is at the top of the pages.
    for source, uri in PUBLISHED.items():
        markdown = markdown.replace(f"](../{source})", f"]({uri})")
    return markdown
