"""Natural failures: clean runs of the agent that end wrong, labelled from the data set's
gold chain by one declared rule (`rule`), and the diagnosers scored on them (`runner`)."""
