"""The unit of each metric the product names (the simulator's canonical metrics, which are also
the names the rules, the signatures and the sample knowledge base use): what an anomaly's
deviations carry (:class:`~seenbefore.types.MetricDeviation` ``unit``) and signatures print.
A metric not listed has no unit."""

from __future__ import annotations

UNITS = {
    "cpu_utilization": "%",
    "memory_utilization": "%",
    "disk_io_wait": "%",
    "network_errors": "/s",
    "network_latency": "ms",
    "request_rate": "rps",
    "error_rate": "%",
    "p99_latency": "ms",
    "db_connections_in_use": "",
    "queue_depth": "",
    "gpu_utilization": "%",
    "gpu_temperature": "C",
}
