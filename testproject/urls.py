from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("agent/", include("toolnexus_django.urls")),
    path("admin/", admin.site.urls),
]
