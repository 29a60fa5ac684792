"""What the server tells an operator: OpenTelemetry traces (:mod:`.tracing`)
and Prometheus metrics (:mod:`.metrics`).

Both are optional extras (``toolnexus-django[otel]``, ``[metrics]``): neither
library is imported, and nothing is recorded, unless it is installed and
switched on. This layer sits low so that every part that does work — the
model's calls, the runs, the wire, push, review — can report it.
"""
