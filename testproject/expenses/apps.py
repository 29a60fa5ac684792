from django.apps import AppConfig


class ExpensesConfig(AppConfig):
    name = "testproject.expenses"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Expenses"
