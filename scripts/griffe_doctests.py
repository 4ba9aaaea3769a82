"""Griffe extension for the API reference: a docstring's doctest examples (``>>>`` lines and
their output, up to a blank line) are rendered as Python console code blocks rather than as
prose, where their brackets would be read as Markdown links."""

from __future__ import annotations

from typing import Any

import griffe


def fenced(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += ["```pycon", *block, "```"]
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fenced(obj.docstring.value)
