"""Integrations with cluster engines (optional extras; each module imports its engine only when used)."""
