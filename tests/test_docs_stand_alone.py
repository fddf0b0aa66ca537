"""The repository stands alone (issue 31): no tracked file cites a document kept outside it.

The design brief and the style guide lived in a folder beside the checkout; what they
fixed is now in the repository's own pages (docs/ARCHITECTURE.md, docs/CONTRACT.md and
the pages they name), and a citation must point there. Generated reports under
docs/results/ may quote history, but never the outside folder itself.
"""

from __future__ import annotations

import subprocess

from sandbox_agent.settings import PROJECT_ROOT

OUTSIDE_FOLDER = "../" + "shared"
OUTSIDE_DOCS = ("DESIGN" + ".md", "STYLE" + ".md", "DESIGN" + " section")
HISTORY = "docs/results/"
THIS_FILE = "tests/test_docs_stand_alone.py"


def _tracked_text_files() -> dict[str, str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "surrogateescape")
    texts = {}
    for name in filter(None, listed.split("\0")):
        path = PROJECT_ROOT / name
        if name == THIS_FILE or path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary
        try:
            texts[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # binary
    return texts


def _citations(name: str, text: str) -> list[str]:
    needles = (OUTSIDE_FOLDER,) if name.startswith(HISTORY) else (OUTSIDE_FOLDER, *OUTSIDE_DOCS)
    return [
        f"{name}:{number}: {line.strip()[:120]}"
        for number, line in enumerate(text.splitlines(), start=1)
        if any(needle in line for needle in needles)
    ]


def test_no_tracked_file_cites_a_document_outside_the_repository() -> None:
    texts = _tracked_text_files()
    assert "docs/CONTRACT.md" in texts
    assert "docs/ARCHITECTURE.md" in texts
    cited = [hit for name, text in sorted(texts.items()) for hit in _citations(name, text)]
    assert cited == [], "cite docs/CONTRACT.md or docs/ARCHITECTURE.md instead:\n" + "\n".join(
        cited
    )


def test_the_check_finds_a_citation() -> None:
    assert _citations("docs/X.md", "see " + "DESIGN" + ".md section 6") != []
    assert _citations("src/x.py", "STYLE" + ".md") != []
    assert _citations(HISTORY + "r.md", "DESIGN" + ".md section 6") == []
    assert _citations(HISTORY + "r.md", "in " + OUTSIDE_FOLDER + "/x") != []


def test_the_readme_sends_a_newcomer_to_the_architecture_and_the_contract() -> None:
    head = "\n".join((PROJECT_ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:12])
    assert "Read first: [docs/ARCHITECTURE.md](docs/ARCHITECTURE.md)" in head
    assert "docs/CONTRACT.md" in head
