"""Retrieval: tokenising, sparse (BM25) search and, later, dense and hybrid search."""
