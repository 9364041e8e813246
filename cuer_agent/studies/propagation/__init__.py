"""Fault propagation: a certified fault injected at hop h, the agent re-executing the
suffix from the saved state, and whether it recovers."""
