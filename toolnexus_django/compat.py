"""The Django Tasks API: ``django.tasks`` on Django >= 6.0, else the
``django-tasks`` backport (same API, different package)."""

from __future__ import annotations

try:  # Django >= 6.0
    from django.tasks import task, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import Task, TaskError, TaskResult, TaskResultStatus
    from django.tasks.signals import task_enqueued, task_finished, task_started

    TASKS_MODULE = "django.tasks"
except ImportError:  # Django 5.2 + django-tasks
    from django_tasks import task, task_backends  # type: ignore[no-redef]
    from django_tasks.backends.base import BaseTaskBackend  # type: ignore[no-redef]
    from django_tasks.base import (  # type: ignore[no-redef]
        Task,
        TaskError,
        TaskResult,
        TaskResultStatus,
    )
    from django_tasks.signals import (  # type: ignore[no-redef]
        task_enqueued,
        task_finished,
        task_started,
    )

    TASKS_MODULE = "django_tasks"

__all__ = [
    "TASKS_MODULE",
    "BaseTaskBackend",
    "Task",
    "TaskError",
    "TaskResult",
    "TaskResultStatus",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
