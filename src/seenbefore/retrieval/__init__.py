"""Retrieval: tokenising; the in-memory corpus index (BM25 / BM25F with word pairs, dense
vectors, recorded signals) rebuilt per store generation; embedders (MiniLM, LSA, hashing);
the search context (context.py), the query plan (plan.py) and the hybrid retriever that fuses
them (hybrid.py); the store's own full-text path (sparse.py); the JSON shape of a result."""
