import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")

from toolnexus_django.asgi import get_asgi_application

# The agent's endpoint and card served by coroutines; everything else by Django.
application = get_asgi_application()
