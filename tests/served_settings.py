"""Settings of the server and worker processes the served tool tests start
(``DJANGO_SETTINGS_MODULE=tests.served_settings``): the demo project's, with
the tools of tests/django_tools.py and the demo's expense tools, and callers
who sign in with HTTP Basic (so a Task's owner is a real Django user)."""

from testproject import settings as demo
from testproject.settings import *  # noqa: F403

TOOLNEXUS = {
    **demo.TOOLNEXUS,
    "TOOLKIT": {
        **demo.TOOLNEXUS["TOOLKIT"],
        # Named here, not imported: settings load before the apps do.
        "tools": [
            "tests.django_tools.whoami",
            "tests.django_tools.awhoami",
            "tests.django_tools.approved_group",
            "tests.django_tools.anote",
            "testproject.expenses.tools.file_expense",
            "testproject.expenses.tools.my_expenses",
        ],
    },
    "AUTHENTICATION_CLASSES": ["rest_framework.authentication.BasicAuthentication"],
    "PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
}
