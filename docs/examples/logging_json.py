# settings.py: every line of the app as one JSON object naming its Task (and, with
# tracing on, its trace and span); "text" is the same for a console, as a format string.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"task": {"()": "toolnexus_django.observability.logs.TaskFilter"}},
    "formatters": {
        "json": {"()": "toolnexus_django.observability.logs.JSONFormatter"},
        "text": {
            "format": "%(asctime)s %(levelname)s %(name)s [%(task_id)s %(trace_id)s] %(message)s"
        },
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["task"], "formatter": "json"},
    },
    "loggers": {"toolnexus_django": {"handlers": ["console"], "level": "INFO"}},
}
