"""Investigation: from an anomaly, an alert or text to evidence (Investigator) and a drafted,
cited, advisory hypothesis (Reporter).

Modules, lowest first: ``query`` (the request), ``evidence`` (what the Investigator produces),
``llm`` (the LLM port and OpenAI-compatible client), ``templates`` (``prompts/*.j2`` into chat
messages), ``rewriter``, ``investigator``, ``reporter`` (the Draft contract and the offline
reporter), ``llm_reporter``, and ``factory`` (the reporter and rewriter the settings ask for,
used by the CLI, the review workflow and the MCP tools). The prompt-injection guard lives in
:mod:`seenbefore.textguard`, below knowledge/ which flags at ingest."""
