"""The Model Context Protocol door: the incident memory as tools for AI agents (``seenbefore mcp``
over stdio, ``/mcp`` over streamable HTTP under ``seenbefore serve``). Needs the ``mcp`` extra."""
