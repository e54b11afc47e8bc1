"""Postmortems in: parsing, validation, chunking and incremental ingestion."""
