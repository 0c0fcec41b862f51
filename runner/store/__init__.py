"""The durable store: campaigns, workloads, rounds, readings and events in SQLite."""
