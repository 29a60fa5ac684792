"""Password hashing for the test process: Django's own PBKDF2 at 1,000
iterations instead of 1,000,000 (0.3-0.6 s of CPU per hash here: a test
that makes three users paid more for them than for the rest of its work).

The hashes read as Django's ``pbkdf2_sha256`` with their iteration count in
them, so a served process of the suite (its settings' hashers) verifies them
as it would any older hash, and upgrades the one it checks. Nothing the app
does depends on the work factor."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1000
