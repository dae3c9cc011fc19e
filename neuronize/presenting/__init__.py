"""Presenting: findings, diffs, reports, review and rule documentation, rendered from result values."""
