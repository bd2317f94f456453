"""Deliberately broken protocols: the property strategies must find every one (test_mutants.py)."""
