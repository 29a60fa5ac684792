"""Fulfilment: running Tasks in the background.

=====================  ==========================================================
module                 holds
=====================  ==========================================================
:mod:`.jobs`           the ``fulfil`` and ``resume`` Django Tasks and enqueueing
:mod:`.runner`         one run: claim, the model, the outcome, the signals
:mod:`.leases`         the runs of this process and the renewal of their leases
:mod:`.recovery`       Tasks whose worker died, enqueues that were lost
:mod:`.sweep`          the periodic sweep (expiry + recovery)
:mod:`.backend`        the app's in-process Django Tasks backend
=====================  ==========================================================
"""
