"""The agents under test (LangGraph), imported and installed as `cuer_agent.graphs` through
the relative symlink cuer_agent/graphs → ../graphs (the files live here: langgraph.json
loads ./graphs/server.py)."""
