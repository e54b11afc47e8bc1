import itertools

from seenbefore.knowledge.chunking import chunk_postmortem, split_section
from seenbefore.types import Postmortem, Section


def _section(text: str) -> Section:
    return Section("timeline", "Timeline", text, 0)


def test_long_prose_splits_at_sentences_with_overlap_and_fits_window() -> None:
    sentences = [f"Sentence number {i} talks about pool exhaustion and latency." for i in range(60)]
    chunks = split_section(_section(" ".join(sentences)), max_words=50, overlap_words=12)
    assert len(chunks) > 1
    assert all(len(c.split()) <= 50 for c in chunks)
    assert all(c.endswith(".") for c in chunks)  # sentence boundaries
    for first, second in itertools.pairwise(chunks):
        assert first.split(". ")[-1] in second  # the last sentence is carried over
    joined = " ".join(chunks)
    assert all(s in joined for s in sentences)  # nothing lost


def test_table_is_chunked_by_row_with_header_repeated() -> None:
    header = "| Time | Event |\n|---|---|\n"
    rows = "".join(
        f"| 10:{i:02d} | step {i} of the rollback and the pool drained |\n" for i in range(30)
    )
    chunks = split_section(_section(header + rows), max_words=40, overlap_words=10)
    assert len(chunks) > 1
    for chunk in chunks:
        lines = chunk.splitlines()
        assert lines[0] == "| Time | Event |" and lines[1] == "|---|---|"
        assert len(chunk.split()) <= 40
    body_rows = [ln for c in chunks for ln in c.splitlines()[2:]]
    assert len(body_rows) == 30  # every row exactly once


def test_run_on_sentence_is_hard_split() -> None:
    words = " ".join(f"w{i}" for i in range(130))
    chunks = split_section(_section(words), max_words=50, overlap_words=10)
    assert all(len(c.split()) <= 50 for c in chunks)
    assert chunks[-1].split()[-1] == "w129"


def test_postmortem_chunks_carry_document_and_section() -> None:
    pm = Postmortem(
        id="A",
        title="T",
        date=None,
        body="x",
        type="memory-leak",
        sections=(
            Section("summary", "Summary", "s1. s2.", 0),
            Section("root_cause", "Cause", "c.", 1),
        ),
    )
    chunks = chunk_postmortem(pm)
    assert [(c.section_key, c.position) for c in chunks] == [
        ("metadata", 0),
        ("summary", 1),
        ("root_cause", 2),
    ]
    assert "memory leak" in chunks[0].text
    assert all(c.doc_id == "A" for c in chunks)
