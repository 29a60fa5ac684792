"""Settings of the ``toolnexus_serve`` the metrics tests start
(``DJANGO_SETTINGS_MODULE=tests.observability.metrics_settings``): the demo
project's, with metrics on behind the tests' token."""

from testproject import settings as demo
from testproject.settings import *  # noqa: F403

TOOLNEXUS = {**demo.TOOLNEXUS, "METRICS": {"TOKEN": "scrape-s3cret"}}
