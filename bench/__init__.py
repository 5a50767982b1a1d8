"""Benchmarks, each printing ratios taken in one run against a named peer (``python -m bench.<name>``)."""
