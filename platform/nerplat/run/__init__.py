"""Execution: plans become Ray Tune experiments whose trials run `nerplat.trial`."""
