"""Evaluation: labelled cases as data, running them through retrieval, fitting the gate and
confidence from them."""
