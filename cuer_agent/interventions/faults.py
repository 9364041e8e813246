"""Structural faults at hop h (written next)."""
