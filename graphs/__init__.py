"""The agents under test (LangGraph), installed as `cuer_agent.graphs` from the
repository's top-level `graphs/`; langgraph.json serves them from `graphs/server.py`."""
