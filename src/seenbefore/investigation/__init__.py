"""Investigation: from an anomaly, an alert or text to evidence (Investigator) and a drafted,
cited, advisory hypothesis (Reporter)."""
