"""adkt: the command-line interface of adk-temporal, and the embedded dev services it starts."""
