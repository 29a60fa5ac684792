"""The attack campaign's corpus (issue 18): hostile bodies, URL forms and
payloads, one module per kind, each case with its expected verdict — run by
the tests in CI."""
