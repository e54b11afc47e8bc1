"""Detection: telemetry series and their readers, the detectors, anomaly signatures, rules and
triage (the NAB harness and the telemetry simulator are in :mod:`seenbefore.lab`)."""
