"""Hostile input the attack campaign of issue 18 sent, kept so the tests run
it in CI: one module per kind (``xss``: text a page must never render as HTML)."""
