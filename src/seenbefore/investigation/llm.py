"""The language-model port: one Protocol with one method, an OpenAI-compatible client (OpenAI,
Ollama, vLLM, llama.cpp server) and a scripted fake for tests and offline runs.

Every failure to get an answer (timeout, connection refused, an HTTP error, an empty reply)
surfaces as :class:`LLMError`, whose message names the endpoint and the model but never the key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from seenbefore.errors import ConfigError, SeenbeforeError
from seenbefore.extras import requires

if TYPE_CHECKING:
    import openai

Message = dict[str, str]


_CODE_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


def unfence(text: str) -> str:
    """A model's reply without the Markdown code fence some models wrap JSON in."""
    match = _CODE_FENCE.match(text)
    return match.group(1) if match else text


class LLMError(SeenbeforeError):
    """The language model gave no usable answer (timeout, connection or HTTP error, empty reply)."""


class LLMTimeout(LLMError):
    """The language model did not answer within the configured timeout."""


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""


class LLM(Protocol):
    """Anything that answers a chat: ``complete(messages)`` returns the reply text and usage."""

    def complete(self, messages: list[Message], *, json_mode: bool = True) -> Completion: ...


def safe_url(url: str) -> str:
    """The URL without user info, query or fragment: safe to put in messages and traces."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class OpenAICompatibleLLM:
    """A chat-completions endpoint through the official ``openai`` SDK, temperature 0, no retries.

    The SDK client is created on the first call and released by :meth:`close` (or ``with``).
    Without an API key a placeholder is sent, so a local server needs none and the SDK never
    falls back to ``OPENAI_API_KEY`` from the environment (which must not reach another host).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 20.0,
        max_tokens: int = 800,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"llm_base_url is {safe_url(base_url)!r}: expected an http(s) URL with a host, "
                "such as http://127.0.0.1:11434/v1; fix SEENBEFORE_LLM_BASE_URL"
            )
        if not model.strip():
            raise ConfigError("llm_model is empty; set SEENBEFORE_LLM_MODEL to the model name")
        if timeout_s <= 0 or max_tokens <= 0:
            raise ConfigError(
                f"LLM timeout_s is {timeout_s} and max_tokens {max_tokens}; both must be > 0"
            )
        self.base_url = base_url
        self.model = model
        self.host: str = parts.hostname
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self._api_key = api_key or "not-needed"
        self._client: openai.OpenAI | None = None

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(base_url={safe_url(self.base_url)!r}, model={self.model!r})"

    def _where(self) -> str:
        return f"LLM endpoint {safe_url(self.base_url)} (model {self.model})"

    def _redact(self, text: str) -> str:
        if self._api_key and self._api_key != "not-needed":
            text = text.replace(self._api_key, "***")
        return text[:300]

    def complete(self, messages: list[Message], *, json_mode: bool = True) -> Completion:
        with requires("llm", f"the LLM client for {self._where()}"):
            import openai

        if self._client is None:
            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self._api_key,
                timeout=self.timeout_s,
                max_retries=0,
            )
        extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if json_mode else {}
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=0,
                max_tokens=self.max_tokens,
                **extra,
            )
        # Each SDK error becomes an LLMError. `from None`: the SDK's exception carries the
        # request, headers included, and its text is re-stated here with the key redacted.
        except openai.APITimeoutError:
            raise LLMTimeout(
                f"{self._where()} did not answer within {self.timeout_s:g} s; "
                "check the server or raise the timeout"
            ) from None
        except openai.APIConnectionError as exc:
            raise LLMError(
                f"{self._where()} could not be reached ({type(exc).__name__}: "
                f"{self._redact(str(exc))}); check that the server runs and the URL is right"
            ) from None
        except openai.APIStatusError as exc:
            raise LLMError(
                f"{self._where()} answered HTTP {exc.status_code}: {self._redact(exc.message)}; "
                + (
                    "check llm_api_key"
                    if exc.status_code in (401, 403)
                    else "check the model name and the server's log"
                )
            ) from None
        except openai.OpenAIError as exc:
            raise LLMError(
                f"{self._where()} failed ({type(exc).__name__}: {self._redact(str(exc))})"
            ) from None
        if not response.choices or not response.choices[0].message.content:
            raise LLMError(f"{self._where()} returned no message content; check the model")
        usage = response.usage
        return Completion(
            text=response.choices[0].message.content,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            model=response.model or self.model,
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> OpenAICompatibleLLM:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ScriptedLLM:
    """A fake that answers from a script, in order: a string, a :class:`Completion`, or an
    exception to raise. Records every call's messages in ``calls``. Token counts of plain strings
    are word counts, so they are deterministic."""

    def __init__(
        self,
        responses: Iterable[str | Completion | BaseException],
        *,
        model: str = "scripted",
        host: str = "scripted.invalid",
    ) -> None:
        self.responses = list(responses)
        self.model = model
        self.host = host
        self.calls: list[list[Message]] = []

    def complete(self, messages: list[Message], *, json_mode: bool = True) -> Completion:
        self.calls.append([dict(m) for m in messages])
        if not self.responses:
            raise LLMError(
                f"ScriptedLLM ran out of responses after {len(self.calls) - 1} calls; "
                "script one more response"
            )
        reply = self.responses.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, Completion):
            return reply
        prompt_words = sum(len(m.get("content", "").split()) for m in messages)
        return Completion(reply, prompt_words, len(reply.split()), self.model)


def llm_from_settings(values: Mapping[str, Any]) -> LLM | None:
    """The LLM client named by ``llm_client`` in ``values`` (else ``SEENBEFORE_LLM_CLIENT``,
    else ``openai``), built by the factory registered under that name in the entry-point group
    ``seenbefore.llm_clients`` (see :mod:`seenbefore.plugins`); None when not configured."""
    from seenbefore import plugins

    name = values.get("llm_client") or os.environ.get("SEENBEFORE_LLM_CLIENT") or "openai"
    return plugins.llm_client_factory(str(name).strip())(values)


def openai_client(values: Mapping[str, Any]) -> LLM | None:
    """An :class:`OpenAICompatibleLLM` from settings, or None when no endpoint is configured.

    Reads ``llm_base_url`` and ``llm_model`` (both needed), ``llm_api_key`` (optional; a plain
    string or a pydantic ``SecretStr``) and, when present, ``llm_timeout_s`` and
    ``llm_max_tokens``. A base URL without a model is a :class:`ConfigError`.
    """
    base_url = values.get("llm_base_url")
    if not base_url:
        return None
    model = values.get("llm_model")
    if not model:
        raise ConfigError(
            f"llm_base_url is set ({safe_url(str(base_url))}) but llm_model is not; "
            "set SEENBEFORE_LLM_MODEL, or unset the base URL to draft offline"
        )
    key = values.get("llm_api_key")
    if key is not None and hasattr(key, "get_secret_value"):
        key = key.get_secret_value()
    options: dict[str, Any] = {}
    if values.get("llm_timeout_s") is not None:
        options["timeout_s"] = float(values["llm_timeout_s"])
    if values.get("llm_max_tokens") is not None:
        options["max_tokens"] = int(values["llm_max_tokens"])
    return OpenAICompatibleLLM(str(base_url), str(model), str(key) if key else None, **options)
