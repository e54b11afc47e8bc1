"""Prompt templates (``prompts/*.j2``) rendered into chat messages, shared by the LLM reporter,
the query rewriter and the judge. Jinja2 is imported on first use, so naming this module (or
the rewriter that uses it) costs nothing until a prompt is actually rendered."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from seenbefore.extras import requires
from seenbefore.investigation.llm import Message
from seenbefore.textguard import fence

if TYPE_CHECKING:
    import jinja2

__all__ = ["render"]


@cache
def _environment() -> jinja2.Environment:
    with requires("llm", "rendering an LLM prompt (Jinja2 templates)"):
        import jinja2

    env = jinja2.Environment(
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters["fence"] = fence
    return env


@cache
def _template(name: str) -> jinja2.Template:
    source = resources.files("seenbefore.investigation").joinpath("prompts", name)
    return _environment().from_string(source.read_text(encoding="utf-8"))


def render(name: str, **variables: Any) -> list[Message]:
    """Render a prompt template into chat messages: its ``system`` block (when it sets one)
    and its body as the user message."""
    module = _template(name).make_module(variables)
    messages: list[Message] = []
    system = str(getattr(module, "system", "")).strip()
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": str(module).strip()})
    return messages
