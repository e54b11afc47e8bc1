"""Command-line interface (Typer + Rich), one module per command group."""
