"""What runs per process (filled in by the next commit)."""
