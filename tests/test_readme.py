"""The README's generated tables match the code."""

from pathlib import Path

import broker.tables
import wire.tables

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_api_table_is_generated_from_the_declarations():
    text = README.read_text()
    assert wire.tables.render_readme(text) == text, "README.md is out of date: run `make readme`"


def test_readme_served_table_is_generated_from_the_handlers():
    text = README.read_text()
    assert broker.tables.render_readme(text) == text, "README.md is out of date: run `make readme`"


def test_readme_shows_the_two_commands():
    text = README.read_text()
    assert "make run" in text and "make test" in text
