"""Compatibility suites run real third-party clients against a real Brook broker."""
