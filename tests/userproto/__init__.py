"""A protocol defined outside rdzv_sim, the way a user would write one (see sorted_hrw.py)."""
