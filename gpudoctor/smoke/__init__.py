"""Sources of the smoke tests (shipped as package data)."""
