"""The HTTP API, version 1: one module per served resource."""
