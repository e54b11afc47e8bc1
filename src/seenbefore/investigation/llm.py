"""The language-model port: one Protocol with one method, an OpenAI-compatible client (OpenAI,
Ollama, vLLM, llama.cpp server) and a scripted fake for tests and offline runs.

Every failure to get an answer (timeout, connection refused, an HTTP error, an empty reply)
surfaces as :class:`LLMError`, whose message names the endpoint and the model but never the key;
a reply cut at its token limit is :class:`LLMTruncated`, and a prompt longer than the model's
window :class:`LLMContextExceeded` (with the window when the server says it).

Structured output: with a schema, the client asks for it through ``response_format`` in the
first form the endpoint accepts (:data:`RESPONSE_FORMATS`, in order: OpenAI's and vLLM's,
Ollama's and llama.cpp's native server's ``json_schema``; llama-cpp-python's ``json_object`` with
a ``schema``; plain ``json_object``; none, the prompt alone), remembers it, and says in each
:class:`Completion` which one it used.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn, Protocol
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


class LLMTruncated(LLMError):
    """The reply was cut at its token limit (``finish_reason: length``): not a complete answer.
    ``completion`` is what came back (its usage counts)."""

    def __init__(self, message: str, completion: Completion | None = None) -> None:
        super().__init__(message)
        self.completion = completion


class LLMContextExceeded(LLMError):
    """The prompt and the reply do not fit the model's context window; ``context`` is the
    window when the server said it."""

    def __init__(
        self, message: str, context: int | None = None, prompt_tokens: int | None = None
    ) -> None:
        super().__init__(message)
        self.context = context
        self.prompt_tokens = prompt_tokens  # what the prompt took, when the server said


# the forms of response_format tried with a schema, most specific first (module doc)
RESPONSE_FORMATS = ("json_schema", "json_object+schema", "json_object", "prompt-only")
_CONTEXT = (
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),  # OpenAI, vLLM, llama-cpp-python
    re.compile(r"context window of (\d+)", re.IGNORECASE),  # llama-cpp-python's own words
    re.compile(r"['\"]n_ctx['\"]\s*:\s*(\d+)"),  # llama.cpp's server (error body)
)
_CONTEXT_WORDS = ("context length", "context window", "context size", "exceed_context")


_PROMPT_TOKENS = re.compile(r"(\d+) in the messages", re.IGNORECASE)


def prompt_tokens_said(text: str) -> int | None:
    """The prompt's tokens an endpoint's context error states (OpenAI's and llama-cpp-python's
    "(N in the messages, M in the completion)"), else None."""
    match = _PROMPT_TOKENS.search(text)
    return int(match.group(1)) if match else None


def context_limit(text: str) -> int | None:
    """The context window an endpoint's error text states, else None."""
    for pattern in _CONTEXT:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def response_format(kind: str, schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``response_format`` request field for ``kind`` (one of :data:`RESPONSE_FORMATS`)."""
    if kind == "json_schema" and schema is not None:
        return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    if kind == "json_object+schema" and schema is not None:
        return {"type": "json_object", "schema": schema}
    if kind in ("json_object", "json_object+schema", "json_schema"):
        return {"type": "json_object"}
    return None


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    response_format: str = ""  # which of RESPONSE_FORMATS the endpoint was asked for
    finish_reason: str = ""


class LLM(Protocol):
    """Anything that answers a chat: ``complete(messages)`` returns the reply text and usage.
    ``schema``: the JSON schema the answer must follow (asked for through ``response_format``
    where the endpoint supports it); ``max_tokens``: a lower reply limit for this call."""

    def complete(
        self,
        messages: list[Message],
        *,
        json_mode: bool = True,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Completion: ...


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
        timeout_s: float = 60.0,
        max_tokens: int = 800,
        *,
        context_tokens: int | None = None,
        formats: str = "auto",
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
        if formats != "auto" and formats not in RESPONSE_FORMATS:
            raise ConfigError(
                f"llm_response_format is {formats!r}; expected auto or one of "
                f"{', '.join(RESPONSE_FORMATS)}; fix SEENBEFORE_LLM_RESPONSE_FORMAT"
            )
        self.base_url = base_url
        self.model = model
        self.host: str = parts.hostname
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self.context_tokens = context_tokens  # the model's window when the settings say it
        # the response formats still worth trying, most specific first ("auto": all of them)
        self._formats: Sequence[str] = RESPONSE_FORMATS if formats == "auto" else (formats,)
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

    def complete(
        self,
        messages: list[Message],
        *,
        json_mode: bool = True,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        with requires("llm", f"the LLM client for {self._where()}"):
            import openai

        if self._client is None:
            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self._api_key,
                timeout=self.timeout_s,
                max_retries=0,
            )
        kinds: Sequence[str] = ("prompt-only",)
        if json_mode:
            kinds = self._formats if schema is not None else ("json_object",)
        for i, kind in enumerate(kinds):
            fmt = response_format(kind, schema)
            try:
                request: dict[str, Any] = {
                    "model": self.model,
                    "messages": messages,
                    "temperature": 0,
                    "max_tokens": max_tokens or self.max_tokens,
                }
                if fmt is not None:
                    request["response_format"] = fmt
                response = self._client.chat.completions.create(**request)
            except openai.APIStatusError as exc:
                said = f"{exc.message} {exc.body}"
                if exc.status_code in (400, 413, 422) and (
                    context_limit(said) or any(w in said.lower() for w in _CONTEXT_WORDS)
                ):
                    raise LLMContextExceeded(
                        f"{self._where()} says the prompt does not fit its context window: "
                        f"{self._redact(exc.message)}",
                        context_limit(said),
                        prompt_tokens_said(said),
                    ) from None
                refused = exc.status_code in (400, 422) or "response_format" in said
                if refused and i + 1 < len(kinds) and schema is not None:
                    # this endpoint does not take that response_format (llama-cpp-python says
                    # so with HTTP 500): the next form, remembered for the next call; the
                    # schema reaches the model whatever the form, in the prompt
                    self._formats = kinds[i + 1 :]
                    continue
                self._raise(exc, openai)
            except openai.OpenAIError as exc:
                self._raise(exc, openai)
            return self._completion(response, kind)
        raise AssertionError("unreachable: the last response format raises or returns")

    def _completion(self, response: Any, kind: str) -> Completion:
        choice = response.choices[0] if response.choices else None
        usage = response.usage
        completion = Completion(
            text=(choice.message.content or "") if choice is not None else "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            model=response.model or self.model,
            response_format=kind,
            finish_reason=(choice.finish_reason or "") if choice is not None else "",
        )
        if completion.finish_reason == "length":
            raise LLMTruncated(
                f"{self._where()} stopped at its token limit ({completion.completion_tokens} "
                "reply tokens, finish_reason length): the answer is incomplete; raise "
                "llm_max_tokens or give the model a larger context",
                completion,
            )
        if not completion.text:
            raise LLMError(f"{self._where()} returned no message content; check the model")
        return completion

    def _raise(self, exc: Exception, openai: Any) -> NoReturn:
        """Each SDK error as an LLMError. ``from None``: the SDK's exception carries the
        request, headers included, and its text is re-stated here with the key redacted."""
        if isinstance(exc, openai.APITimeoutError):
            raise LLMTimeout(
                f"{self._where()} did not answer within {self.timeout_s:g} s; "
                "check the server or raise the timeout"
            ) from None
        if isinstance(exc, openai.APIConnectionError):
            raise LLMError(
                f"{self._where()} could not be reached ({type(exc).__name__}: "
                f"{self._redact(str(exc))}); check that the server runs and the URL is right"
            ) from None
        if isinstance(exc, openai.APIStatusError):
            raise LLMError(
                f"{self._where()} answered HTTP {exc.status_code}: {self._redact(exc.message)}; "
                + (
                    "check llm_api_key"
                    if exc.status_code in (401, 403)
                    else "check the model name and the server's log"
                )
            ) from None
        raise LLMError(
            f"{self._where()} failed ({type(exc).__name__}: {self._redact(str(exc))})"
        ) from None

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

    def complete(
        self,
        messages: list[Message],
        *,
        json_mode: bool = True,
        schema: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
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
    ``llm_max_tokens``, ``llm_context_tokens`` and ``llm_response_format``. A base URL
    without a model is a :class:`ConfigError`.
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
    if values.get("llm_context_tokens") is not None:
        options["context_tokens"] = int(values["llm_context_tokens"])
    if values.get("llm_response_format"):
        options["formats"] = str(values["llm_response_format"])
    return OpenAICompatibleLLM(str(base_url), str(model), str(key) if key else None, **options)
