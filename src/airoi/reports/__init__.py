"""What both interfaces serve: the served rows, their queries and the figures over them.

The HTTP API (airoi.api) and the tools (airoi.tools) call these; neither computes a figure of
its own, so the two answer the same to the cent.
"""
