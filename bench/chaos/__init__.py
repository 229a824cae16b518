"""The chaos bench: SIGKILL worker processes while conversations run (``python -m bench.chaos.run``).

Not part of the test run; bench/README.md says what it measures.
"""
