"""Utilities shared by the monitors and optimizers."""
