"""The README's generated tables match the code."""

from pathlib import Path

from wire.tables import render_readme

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_api_table_is_generated_from_the_declarations():
    text = README.read_text()
    assert render_readme(text) == text, "README.md is out of date: run `make readme`"


def test_readme_shows_the_two_commands():
    text = README.read_text()
    assert "make run" in text and "make test" in text
