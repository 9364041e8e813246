"""The agents under test (LangGraph); langgraph.json serves them from
cuer_agent/graphs/server.py."""
