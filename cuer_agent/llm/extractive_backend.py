"""The `extractive` backend's registration, with what it declares (`BackendAbout`).

It sits beside `extractive.py`, not in it: the bytes of `extractive.py` are part of the
reader's version (`rules_version`), hence of every cache key and every trace that records
one, so describing the reader must not edit the reader. (`extractive.py` registers the
name bare; this module registers it again with its declaration, and is the built-in the
backend registry imports.)
"""

from __future__ import annotations

from cuer_agent.llm.backends import register_backend
from cuer_agent.llm.extractive import make_extractive

register_backend("extractive", help="offline rule-based stand-in", concurrency=1,
                 rule_based=True)(make_extractive)
