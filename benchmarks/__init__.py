"""Benchmarks of setfit_lite against its peers: run each from the repository root as ``python -m benchmarks.<name>``
(e.g. ``python -m benchmarks.accuracy_suite --help``); they share helpers by importing each other."""
