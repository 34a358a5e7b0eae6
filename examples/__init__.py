"""Runnable examples built on Brook."""
