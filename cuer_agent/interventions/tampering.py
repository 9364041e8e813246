"""Certified content tampering (written next)."""
