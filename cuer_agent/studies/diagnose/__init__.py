"""The diagnosers scored against the certified first-error hop, and `diagnose --traces`
for any agent's traces."""
