"""Optional models a simulation can be given (the CPU that one-machine runs share)."""
