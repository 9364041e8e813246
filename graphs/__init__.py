"""The agents under test (LangGraph), installed as `cuer_agent.graphs`."""
