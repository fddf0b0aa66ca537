"""Assurance tooling: the guarantees table checked against code and tests, and the
adversarial report regenerated from the security suites' real results."""
