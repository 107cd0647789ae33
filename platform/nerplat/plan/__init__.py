"""The compiled plan: plain, JSON-serialisable data that the runner and a single trial consume."""
