"""Detection: telemetry series and their readers, the detectors, anomaly signatures, rules and
triage (the NAB harness is in :mod:`seenbefore.lab`)."""
