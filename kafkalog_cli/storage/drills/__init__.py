"""Seeded log dirs, deliberate damage and crash points for tests, fixtures and runbook drills;
not used by the read or repair paths."""
