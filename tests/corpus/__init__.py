"""The attack campaign's corpus (issue 18): hostile values, one module per
kind, run by the tests in CI."""
