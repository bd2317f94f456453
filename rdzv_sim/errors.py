"""The root of rdzv-sim's own exceptions: `except rdzv_sim.Error` catches every one of them."""


class Error(Exception):
    """Something rdzv-sim refuses or cannot do, said in a message meant for the user."""
