"""The lab: code that experiments, benchmarks and the demo use, not the product.

The NAB harness and scorer (:mod:`.nab`, :mod:`.nab_io`, :mod:`.nab_scoring`), the telemetry
simulator, and the detector members the shipped ensemble does not use live here. The lab may
import the product (``seenbefore.detection`` above all); no product package imports the lab
(import-linter contract ``no-lab``): only the CLI commands that are themselves experiments or
demos (``seenbefore nab``, the simulated runs of ``detect`` and ``watch``) do.
"""
