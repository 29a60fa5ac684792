"""The Django Tasks as earlier versions named them: jobs enqueued before an
upgrade (in a database backend's queue) still find ``toolnexus_django.tasks.
fulfil`` and ``resume``. They live in :mod:`.fulfilment.jobs`."""

from .fulfilment.jobs import fulfil, resume

__all__ = ["fulfil", "resume"]
