"""The calibration subsystem: the one place that makes labelled cases, reads label sources,
picks the trust gate's dense weight and fits ``p_precedent`` with its verdict thresholds.

- ``cases``, ``styles``, ``selftest``: cases (self-made in the styles people type, the
  self-test by type, and the :class:`Case` type case files are read into);
- ``labels``: which postmortems are each other's precedents without a ``type`` (links, the
  failure mode), and ``people``: what reviewers and feedback said, with who said it;
- ``runs``: a case searched through the knowledge base as served;
- ``weights``: the one dense-weight picker; ``fitting`` (with ``logistic``): the one fit,
  operating point, held-out figures and precedence rule;
- drivers: ``selfcal`` (a KB calibrating itself), ``labelled`` (``seenbefore calibrate
  CASES``), ``people`` (refits from review decisions and feedback);
- ``record``: the one record (core/calibration.py) they write and retrieval reads.

The knowledge base calls ``selfcal`` directly after ingest and reindex; ``evaluation/`` is a
harness on top.
"""
