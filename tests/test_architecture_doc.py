"""docs/architecture.md names every module of the package (issue 16 item 8)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "sdcrisk"


def test_every_module_has_a_line_in_the_architecture_doc():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("## Every module", 1)[1].split("\n## ", 1)[0]
    listed = set()
    package = ""
    for line in section.splitlines():
        if line.endswith("/") and not line.startswith("-"):
            package = line.rstrip("/")
        elif line.strip() == "Package root":
            package = ""
        elif line.startswith("- `") and "` - " in line:
            name = line[3:line.index("`", 3)]
            listed.add(f"{package}/{name}" if package else name)
    modules = {str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
               if not (p.name == "__init__.py" and p.stat().st_size == 0)}
    assert sorted(modules - listed) == [], "add a line for each to docs/architecture.md"
    assert sorted(listed - modules) == [], "docs/architecture.md names modules that are gone"
