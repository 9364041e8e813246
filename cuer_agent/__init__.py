"""cuer-agent: which evidence mattered, and where a failure started.

Public areas: `cuer_agent.trace` (the observable trace), `cuer_agent.data` (examples and
loaders), `cuer_agent.retrieval` (BM25 and LangChain retrievers).
"""

__version__ = "0.1.0"
