"""Shared test support: tiny models, the model zoo, fixture data and worker processes."""
