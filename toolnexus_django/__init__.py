"""toolnexus-django: a Django project as an A2A agent server powered by toolnexus."""

__version__ = "0.1.0"
