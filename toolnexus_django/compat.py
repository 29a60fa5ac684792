"""The Django Tasks API: ``django.tasks`` on Django >= 6.0, else the
``django-tasks`` backport (same API, different package)."""

from __future__ import annotations

try:  # Django >= 6.0
    from django.tasks import task, task_backends
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import Task, TaskError, TaskResult, TaskResultStatus
    from django.tasks.exceptions import InvalidTaskBackend as InvalidTaskBackendError
    from django.tasks.signals import task_enqueued, task_finished, task_started

    TASKS_MODULE = "django.tasks"
except ImportError:  # Django 5.2 + django-tasks
    # The two packages are the same API under different names; type checkers
    # (django-stubs >= 6 ships django.tasks) see them as distinct types.
    from django_tasks import (  # type: ignore[no-redef, assignment, unused-ignore]
        task,
        task_backends,
    )
    from django_tasks.backends.base import (  # type: ignore[no-redef, assignment, unused-ignore]
        BaseTaskBackend,
    )
    from django_tasks.base import (  # type: ignore[no-redef, assignment, unused-ignore]
        Task,
        TaskError,
        TaskResult,
        TaskResultStatus,
    )
    from django_tasks.exceptions import (  # type: ignore[no-redef, assignment, unused-ignore]
        InvalidTaskBackendError,
    )
    from django_tasks.signals import (  # type: ignore[no-redef, assignment, unused-ignore]
        task_enqueued,
        task_finished,
        task_started,
    )

    TASKS_MODULE = "django_tasks"

__all__ = [
    "TASKS_MODULE",
    "BaseTaskBackend",
    "InvalidTaskBackendError",
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
