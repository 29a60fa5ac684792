"""Push notifications: durable, retried, authenticated, SSRF-safe webhooks.

- :mod:`.configs` stores a Task's configs in the django store's database,
  :mod:`.local` beside the Task for the memory and file stores;
- :mod:`.book` is where a config's delivery state lives, for either;
- :mod:`.locks` is the one order their database rows are locked in;
- :mod:`.ssrf` decides which URLs may be called (:mod:`.addresses`: what an
  address stands for);
- :mod:`.secrets` keeps tokens and credentials encrypted at rest;
- :mod:`.notify` builds one notification's request, :mod:`.sender` makes
  the HTTP call;
- :mod:`.delivery` follows each config's Task event log and delivers it.

The event log is the outbox: every move writes its event in the same
transaction as the change (:mod:`toolnexus_django.lifecycle.events`), and a
config's ``delivered_seq`` says how far its notifications have got, so what
was not delivered is still there after any crash.
"""
