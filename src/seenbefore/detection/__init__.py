"""Detection: telemetry, the detector, anomaly signatures, rules and triage, NAB."""
