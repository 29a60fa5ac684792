"""``toolnexus_django.backends.InProcessBackend``: the path settings name the
app's embedded Django Tasks backend by (it lives in :mod:`.fulfilment.backend`)."""

from .fulfilment.backend import InProcessBackend

__all__ = ["InProcessBackend"]
